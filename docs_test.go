package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/internal/markdown"
)

// userDocs returns README.md and every page under docs/.
func userDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDocLinksResolve: every relative link of README.md and docs/ names a file that exists and,
// when it has a fragment, a heading of that page.
func TestDocLinksResolve(t *testing.T) {
	pages := map[string]markdown.Page{}
	read := func(path string) (markdown.Page, bool) {
		if p, ok := pages[path]; ok {
			return p, true
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return markdown.Page{}, false
		}
		p, err := markdown.Parse(string(data))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		pages[path] = p
		return p, true
	}
	var links int
	for _, file := range userDocs(t) {
		page, _ := read(file)
		for _, l := range page.Links {
			if strings.Contains(l.Target, "://") || strings.HasPrefix(l.Target, "mailto:") {
				continue
			}
			links++
			path, fragment, _ := strings.Cut(l.Target, "#")
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s:%d: link %s: %s does not exist", file, l.Line, l.Target, target)
				continue
			}
			if fragment == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s:%d: link %s: a fragment on a file that is not a page", file, l.Line, l.Target)
				continue
			}
			if p, _ := read(target); !p.Anchors[fragment] {
				t.Errorf("%s:%d: link %s: %s has no heading #%s", file, l.Line, l.Target, target, fragment)
			}
		}
	}
	if links < 50 {
		t.Errorf("found only %d relative links in the docs; is the parser missing some?", links)
	}
}

// The README is a front door, not a manual.
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 200 {
		t.Errorf("README.md has %d lines; keep it to 200 and move the rest to docs/", n)
	}
}

// Every page of docs/ starts by saying who it is for (a generated reference page after its
// notice) and ends with links onward.
func TestDocPagesSayWhoTheyAreForAndWhereNext(t *testing.T) {
	for _, file := range userDocs(t)[1:] {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.TrimSpace(string(data))
		if strings.HasPrefix(text, "<!--") {
			_, text, _ = strings.Cut(text, "-->")
			text = strings.TrimSpace(text)
		}
		_, body, _ := strings.Cut(text, "\n")
		if !strings.HasPrefix(strings.TrimSpace(body), "For ") && !strings.HasPrefix(strings.TrimSpace(body), "A design note") {
			t.Errorf("%s: the first paragraph should say who the page is for (\"For ...\")", file)
		}
		if !strings.Contains(text, "](") || strings.LastIndex(text, "](") < len(text)*3/4 {
			t.Errorf("%s: the page should end with links onward", file)
		}
	}
}

// addingAController is the section of docs/development.md that TestAddingAControllerNamesWhatExists reads.
const addingAController = "## Adding a controller"

// TestAddingAControllerNamesWhatExists: every file, function, type and field that the steps
// of "Adding a controller" name exists, NAME read as myapp, so that the steps cannot send a
// contributor to something renamed or removed.
func TestAddingAControllerNamesWhatExists(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(data), "\n"+addingAController+"\n")
	if !found {
		t.Fatalf("docs/development.md has no %q section", addingAController)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	declared := declaredNames(t)
	identifier := regexp.MustCompile(`^([A-Za-z_]\w*\.)?([A-Z]\w*)(\(\))?$`)
	var paths, names int
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(section, -1) {
		token := m[1]
		switch {
		case strings.ContainsAny(token, " =+") || strings.HasPrefix(token, "-") || token == "NAME":
			continue // a command, a flag, a marker
		case strings.Contains(token, "/") || strings.HasPrefix(token, "."):
			paths++
			path := strings.ReplaceAll(token, "NAME", "myapp")
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s names %s, but %s does not exist", addingAController, token, path)
			}
		case identifier.MatchString(token):
			names++
			name := identifier.FindStringSubmatch(token)[2]
			if !declared[name] {
				t.Errorf("%s names %s, but no package of the module declares %s", addingAController, token, name)
			}
		}
	}
	if paths < 10 || names < 10 {
		t.Errorf("%s: found only %d paths and %d names to check", addingAController, paths, names)
	}
}

// declaredNames returns every exported func, method, type, struct field, const and var that the
// module's Go files declare.
func declaredNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "bin" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".":
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				names[n.Name.Name] = true
			case *ast.TypeSpec:
				names[n.Name.Name] = true
			case *ast.ValueSpec:
				for _, id := range n.Names {
					names[id.Name] = true
				}
			case *ast.Field:
				for _, id := range n.Names {
					names[id.Name] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// runbookBase is where each alert's runbook_url points: its section of the alerts page, on
// GitHub.
const runbookBase = "https://github.com/example/switchboard/blob/main/docs/operations/alerts.md#"

// TestAlertRunbooks: every alert of config/alerts has a runbook_url that points at a section of
// docs/operations/alerts.md named after it, and every section named after an alert is one's.
func TestAlertRunbooks(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("config", "alerts", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join("docs", "operations", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := markdown.Parse(string(page))
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]bool{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			anchor := markdown.Anchor(r.Alert)
			alerts[anchor] = true
			if got := r.Annotations["runbook_url"]; got != runbookBase+anchor {
				t.Errorf("alert %s: runbook_url %q, want %s", r.Alert, got, runbookBase+anchor)
			}
			if !parsed.Anchors[anchor] {
				t.Errorf("alert %s: docs/operations/alerts.md has no section ## %s", r.Alert, r.Alert)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("config/alerts/alerts.yaml has no alerts")
	}
	for anchor := range parsed.Anchors {
		if strings.HasPrefix(anchor, "switchboard") && !alerts[anchor] {
			t.Errorf("docs/operations/alerts.md has a runbook #%s for no alert", anchor)
		}
	}
}

// TestGettingStartedShowsTheCRDsColumns: where getting-started runs `kubectl get` on one of our
// kinds, its sample output has the columns the CRD prints (NAME, then each printer column of
// priority 0), so that a column added or removed in apis/ cannot leave the page behind. The
// walkthrough test of test/e2e checks every command's columns against a real cluster.
func TestGettingStartedShowsTheCRDsColumns(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	crds, err := filepath.Glob(filepath.Join("config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var checked int
	for _, path := range crds {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Names struct {
					Plural, Singular string
					ShortNames       []string `json:"shortNames"`
				}
				Versions []struct {
					Columns []struct {
						Name     string
						Priority int
					} `json:"additionalPrinterColumns"`
				}
			}
		}
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		names := append([]string{crd.Spec.Names.Plural, crd.Spec.Names.Singular}, crd.Spec.Names.ShortNames...)
		got := regexp.MustCompile(`(?m)^kubectl get (` + strings.Join(names, "|") + `)\b`)
		if !got.MatchString(page) || len(crd.Spec.Versions) != 1 {
			continue
		}
		want := []string{"NAME"}
		for _, c := range crd.Spec.Versions[0].Columns {
			if c.Priority == 0 {
				want = append(want, strings.ToUpper(c.Name))
			}
		}
		checked++
		found := false
		for _, line := range strings.Split(page, "\n") {
			if strings.Join(strings.Fields(line), " ") == strings.Join(want, " ") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/getting-started.md runs `kubectl get %s` but no sample output shows its columns %q (from %s)", crd.Spec.Names.Singular, want, path)
		}
	}
	if checked < 2 {
		t.Errorf("checked the columns of only %d kinds; does the page still run `kubectl get` on a MyApp and a VerticalScaler?", checked)
	}
}
