// Package build_test checks that the Dockerfile builds the manager as `make build` does. No
// Docker engine runs here, so the Dockerfile is kept correct by construction: the same build
// command, the same Go version, every imported package copied, a non-root distroless runtime.
package build_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the module root, from this package's directory.
var root = filepath.Join("..", "..")

// module is the product's module path.
const module = "github.com/example/switchboard"

// lines returns the lines of a file at the module root, with backslash continuations joined.
func lines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var cont string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		out = append(out, cont+line)
		cont = ""
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// makeVariable returns the value of a simple Makefile variable assignment NAME = VALUE.
func makeVariable(t *testing.T, name string) string {
	t.Helper()
	re := regexp.MustCompile(`^` + name + `\s*[:?]?=\s*(.*)$`)
	for _, line := range lines(t, "Makefile") {
		if m := re.FindStringSubmatch(line); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	t.Fatalf("Makefile has no variable %s", name)
	return ""
}

// instructions returns the Dockerfile's instructions, keyword first.
func instructions(t *testing.T) [][2]string {
	t.Helper()
	var out [][2]string
	for _, line := range lines(t, "Dockerfile") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keyword, rest, _ := strings.Cut(line, " ")
		out = append(out, [2]string{strings.ToUpper(keyword), strings.TrimSpace(rest)})
	}
	return out
}

// stamps are the Makefile's variables computed from git, which the Dockerfile takes as build
// arguments of the same names.
var stamps = []string{"VERSION", "REVISION", "BUILD_DATE"}

// expand replaces each $(NAME) in value by the Makefile variable's value, and each stamp by the
// Dockerfile's ${NAME}.
func expand(t *testing.T, value string) string {
	t.Helper()
	return regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(value, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if slices.Contains(stamps, name) {
			return "${" + name + "}"
		}
		return expand(t, makeVariable(t, name))
	})
}

func TestDockerfileBuildsLikeMake(t *testing.T) {
	goBuild := expand(t, makeVariable(t, "GO_BUILD_MANAGER"))
	if !strings.Contains(goBuild, "CGO_ENABLED=0") {
		t.Errorf("GO_BUILD_MANAGER %q: the distroless static image needs a static binary (CGO_ENABLED=0)", goBuild)
	}
	var buildRecipe bool
	for _, line := range lines(t, "Makefile") {
		if strings.TrimSpace(line) == "$(GO_BUILD_MANAGER) $(MANAGER) ." {
			buildRecipe = true
		}
	}
	if !buildRecipe {
		t.Error("the Makefile's build recipe is not `$(GO_BUILD_MANAGER) $(MANAGER) .`")
	}
	var runs []string
	for _, in := range instructions(t) {
		if in[0] == "RUN" && strings.Contains(in[1], "go build") {
			runs = append(runs, in[1])
		}
	}
	want := goBuild + " manager ."
	if len(runs) != 1 || runs[0] != want {
		t.Errorf("Dockerfile go build %q, want exactly the Makefile's %q", runs, want)
	}
	for _, name := range stamps {
		if !strings.Contains(goBuild, "${"+name+"}") {
			t.Errorf("GO_BUILD_MANAGER does not stamp $(%s)", name)
		}
	}
	args := map[string]bool{}
	for _, in := range instructions(t) {
		if in[0] == "ARG" {
			name, _, _ := strings.Cut(in[1], "=")
			args[name] = true
		}
	}
	for _, name := range stamps {
		if !args[name] {
			t.Errorf("the Dockerfile has no ARG %s for the version stamps", name)
		}
	}
}

func TestDockerfileGoVersionIsGoMod(t *testing.T) {
	var goVersion string
	for _, line := range lines(t, "go.mod") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			parts := strings.Split(v, ".")
			goVersion = parts[0] + "." + parts[1]
		}
	}
	from := instructions(t)[0]
	if from[0] != "FROM" || !strings.HasPrefix(from[1], "golang:"+goVersion+" ") {
		t.Errorf("first stage %s %s, want golang:%s (go.mod)", from[0], from[1], goVersion)
	}
}

// TestDockerfileCopiesEveryPackage checks that the build stage has every package of this module
// that the manager imports; a package added without a COPY line breaks only the image build,
// which no test here runs.
func TestDockerfileCopiesEveryPackage(t *testing.T) {
	copied := map[string]bool{}
	for _, in := range instructions(t) {
		if in[0] != "COPY" || strings.HasPrefix(in[1], "--from") {
			continue
		}
		fields := strings.Fields(in[1])
		for _, src := range fields[:len(fields)-1] {
			copied[strings.TrimSuffix(src, "/")] = true
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if .Module}}{{if eq .Module.Path "`+module+`"}}{{.ImportPath}} {{range .GoFiles}}{{.}} {{end}}{{end}}{{end}}`, ".")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		if pkg == "" {
			for _, file := range fields[1:] {
				if !copied[file] {
					t.Errorf("the Dockerfile does not copy %s of the main package", file)
				}
			}
			continue
		}
		if !copied[strings.Split(pkg, "/")[0]] {
			t.Errorf("the Dockerfile copies no directory holding %s", fields[0])
		}
	}
}

func TestDockerfileRunsAsNonRoot(t *testing.T) {
	ins := instructions(t)
	var lastFrom, user, entrypoint string
	for _, in := range ins {
		switch in[0] {
		case "FROM":
			lastFrom, user = in[1], ""
		case "USER":
			user = in[1]
		case "ENTRYPOINT":
			entrypoint = in[1]
		}
	}
	if lastFrom != "gcr.io/distroless/static:nonroot" || user != "65532:65532" || entrypoint != `["/manager"]` {
		t.Errorf("runtime stage FROM %q USER %q ENTRYPOINT %q; want gcr.io/distroless/static:nonroot, 65532:65532, [\"/manager\"]", lastFrom, user, entrypoint)
	}
}
