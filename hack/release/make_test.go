package main

import (
	"bytes"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// repoRoot is the repository's root, from this package's directory.
var repoRoot = filepath.Join("..", "..")

// cloneHead clones the repository's HEAD commit into a new directory, as a user or CI would
// check it out: what is committed, nothing else. Uncommitted changes of this checkout are not
// in the clone.
func cloneHead(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	head := strings.TrimSpace(runIn(t, repoRoot, "git", "rev-parse", "HEAD"))
	dir := filepath.Join(t.TempDir(), "switchboard")
	runIn(t, repoRoot, "git", "clone", "--quiet", "--no-checkout", "--shared", ".", dir)
	runIn(t, dir, "git", "checkout", "--quiet", "--detach", head)
	return dir
}

// runIn runs a program in dir and returns its stdout; it fails the test on error.
func runIn(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	out, err := commandErr(dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s in %s: %v", name, strings.Join(args, " "), dir, err)
	}
	return out
}

// commandErr runs a program in dir, with neither the make variables of a make that runs this
// test nor a version given in the environment, and returns its stdout, or an error with its
// stderr.
func commandErr(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		switch key {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "VERSION", "REVISION", "BUILD_DATE", "IMG", "DIST", "LOCALBIN":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &commandError{err: err, stderr: stderr.String()}
	}
	return stdout.String(), nil
}

type commandError struct {
	err    error
	stderr string
}

func (e *commandError) Error() string { return e.err.Error() + "\n" + e.stderr }

// versionOf returns the fields of `manager --version` or `make version`.
func versionOf(out string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			fields[k] = v
		}
	}
	return fields
}

// TestMakeImageIsReproducible runs `make image` in two clones of one commit: the same index
// digest, the same tarball. It then checks what the build says it is (the binary taken out of
// the image), its CA bundle and the label naming it, the installer's refusal of an IMG without
// a tag and its pinning, `make image-push` to a registry on loopback, and that a clone with an
// uncommitted change builds a -dirty version.
//
// It runs in `make test-e2e` (SWITCHBOARD_E2E=1), which builds the image anyway: on an empty
// build cache the two builds for linux/arm64 take minutes, more than `make test` may.
func TestMakeImageIsReproducible(t *testing.T) {
	if os.Getenv("SWITCHBOARD_E2E") != "1" {
		t.Skip("builds the image twice: runs in `make test-e2e` (SWITCHBOARD_E2E=1)")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not found")
	}
	clones := []string{cloneHead(t), cloneHead(t)}
	var digests []string
	var tars [][]byte
	for _, dir := range clones {
		runIn(t, dir, "make", "image")
		digests = append(digests, strings.TrimSpace(runIn(t, dir, filepath.Join("bin", "release"), "digest", "--layout=dist/image")))
		data, err := os.ReadFile(filepath.Join(dir, "dist", "image.tar"))
		if err != nil {
			t.Fatal(err)
		}
		tars = append(tars, data)
	}
	if digests[0] != digests[1] {
		t.Errorf("make image in two clones of one commit: index %s and %s", digests[0], digests[1])
	}
	if !bytes.Equal(tars[0], tars[1]) {
		t.Error("make image in two clones of one commit: different tarballs")
	}
	dir := clones[0]
	stamped := versionOf(runIn(t, dir, "make", "--no-print-directory", "version"))
	commitTime, err := time.Parse(time.RFC3339, strings.TrimSpace(runIn(t, dir, "git", "log", "-1", "--format=%cI")))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the image's binary says which build it is", func(t *testing.T) {
		manager := filepath.Join(t.TempDir(), "manager")
		runIn(t, dir, filepath.Join("bin", "release"), "extract", "--layout=dist/image", "--platform=linux/"+goarch(t), "--out="+manager)
		got := versionOf(runIn(t, dir, manager, "--version"))
		head := strings.TrimSpace(runIn(t, dir, "git", "rev-parse", "HEAD"))
		if got["commit"] != head || got["version"] != stamped["version"] || strings.HasSuffix(got["version"], "-dirty") {
			t.Errorf("--version of the image's binary %v, want commit %s and the clean version %s", got, head, stamped["version"])
		}
		if built, err := time.Parse(time.RFC3339, got["buildDate"]); err != nil || !built.Equal(commitTime) {
			t.Errorf("build date %q, want the commit's time %s", got["buildDate"], commitTime.UTC().Format(time.RFC3339))
		}
	})

	t.Run("each platform's binary is static", func(t *testing.T) {
		for platform, machine := range map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64} {
			manager := filepath.Join(t.TempDir(), "manager")
			runIn(t, dir, filepath.Join("bin", "release"), "extract", "--layout=dist/image", "--platform="+platform, "--out="+manager)
			f, err := elf.Open(manager)
			if err != nil {
				t.Fatalf("%s: %v", platform, err)
			}
			if f.Machine != machine {
				t.Errorf("%s: the binary is for %s", platform, f.Machine)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s: the binary needs a dynamic loader: not static", platform)
				}
			}
			if err := f.Close(); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("the image's CA bundle is the module's that its label names", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "ca-certificates.crt")
		runIn(t, dir, filepath.Join("bin", "release"), "extract", "--layout=dist/image", "--platform=linux/"+goarch(t), "--file="+caBundlePath, "--out="+out)
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if want, roots := caBundle(); !bytes.Equal(data, want) || len(parseBundle(t, data)) != roots {
			t.Errorf("the image's /%s is not the %d roots of %s this module requires", caBundlePath, roots, caBundleModule)
		}
		idx, _, err := readLayout(filepath.Join(dir, "dist", "image"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.Annotations[labelCABundle], goModRequirement(t, caBundleModule); got != want {
			t.Errorf("the image's %s is %q, want %q", labelCABundle, got, want)
		}
	})

	t.Run("build-installer refuses an IMG without a tag", func(t *testing.T) {
		_, err := commandErr(dir, "make", "build-installer", "IMG=registry.example.com/switchboard")
		if err == nil || !strings.Contains(err.Error(), `IMG="registry.example.com/switchboard" has neither a tag nor a digest`) {
			t.Errorf("make build-installer IMG=registry.example.com/switchboard: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "dist", "install.yaml")); err == nil {
			t.Error("the refused build wrote dist/install.yaml")
		}
	})

	t.Run("build-installer pins the image", func(t *testing.T) {
		if _, err := exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl not found: make build-installer renders config/default with `kubectl kustomize`")
		}
		runIn(t, dir, "make", "build-installer", "IMG=registry.example.com/switchboard:v9.9.9")
		data, err := os.ReadFile(filepath.Join(dir, "dist", "install.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "image: registry.example.com/switchboard:v9.9.9@" + digests[0] + "\n"; !strings.Contains(string(data), want) {
			t.Errorf("dist/install.yaml does not pin %q", want)
		}
	})

	t.Run("image-push", func(t *testing.T) {
		// go-containerregistry's registry on loopback, and no credentials of this machine's user.
		server := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		defer server.Close()
		image := strings.TrimPrefix(server.URL, "http://") + "/switchboard:v9.9.9"
		dockerConfig := "DOCKER_CONFIG=" + t.TempDir()
		runIn(t, dir, "env", dockerConfig, "make", "image-push", "IMG="+image)
		ref, err := name.ParseReference(image)
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := remote.Index(ref)
		if err != nil {
			t.Fatalf("pulling %s: %v", image, err)
		}
		if got, err := pulled.Digest(); err != nil || got.String() != digests[0] {
			t.Errorf("make image-push IMG=%s: the registry holds %v (%v), make image built %s", image, got, err, digests[0])
		}
	})

	t.Run("a dirty tree builds -dirty", func(t *testing.T) {
		dirty := clones[1]
		f, err := os.OpenFile(filepath.Join(dirty, "README.md"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("\nAn uncommitted line.\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		runIn(t, dirty, "make", "build")
		got := versionOf(runIn(t, dirty, filepath.Join("bin", "manager"), "--version"))
		if got["version"] != stamped["version"]+"-dirty" {
			t.Errorf("--version of a build with an uncommitted change: %q, want %q", got["version"], stamped["version"]+"-dirty")
		}
	})
}

// goarch is this machine's architecture, as Go names it.
func goarch(t testing.TB) string {
	t.Helper()
	return strings.TrimSpace(runIn(t, ".", "go", "env", "GOARCH"))
}
