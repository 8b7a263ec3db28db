package vpacompare

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/internal/testenv"
)

// vpaFlagDirs are the directories of the VPA's module whose code binds each component's own
// flags; common/ binds those all three share.
var vpaFlagDirs = map[string][]string{
	"common":                   {verticalscaler.VPARecommender, verticalscaler.VPAUpdater, verticalscaler.VPAAdmissionController},
	"pkg/recommender":          {verticalscaler.VPARecommender},
	"pkg/updater":              {verticalscaler.VPAUpdater},
	"pkg/admission-controller": {verticalscaler.VPAAdmissionController},
}

// TestVPAFlagsAreTheVPAs: the flags the migration page's generated table lists
// (verticalscaler.VPAFlags) are those the VPA's components bind in their own code (of the
// release this module requires, read from the module cache), each with the components that take
// it: a flag the VPA adds shows up here, to be said what stands for it. The flags of the
// libraries they use (klog's, leader election's, feature gates) are not the VPA's own and are
// left out.
func TestVPAFlagsAreTheVPAs(t *testing.T) {
	dir, err := testenv.ModuleDir(testenv.VPAModule, testenv.VPAVersion)
	if err != nil {
		t.Fatal(err)
	}
	theirs := map[string][]string{}
	for sub, components := range vpaFlagDirs {
		for _, name := range boundFlags(t, filepath.Join(dir, sub)) {
			for _, c := range components {
				if !slices.Contains(theirs[name], c) {
					theirs[name] = append(theirs[name], c)
				}
			}
		}
	}
	if len(theirs) < 90 {
		t.Fatalf("found %d flags in VPA %s's code: too few to be every flag, the way they are bound has changed", len(theirs), testenv.VPAVersion)
	}
	ours := map[string][]string{}
	for _, f := range verticalscaler.VPAFlags {
		if _, twice := ours[f.Name]; twice {
			t.Errorf("--%s is listed twice", f.Name)
		}
		ours[f.Name] = f.Components
	}
	sorted := cmp.Transformer("sorted", func(s []string) []string { return slices.Sorted(slices.Values(s)) })
	if diff := cmp.Diff(theirs, ours, sorted); diff != "" {
		t.Errorf("verticalscaler.VPAFlags against the flags of VPA %s, by the components that take them (-VPA +table):\n%s", testenv.VPAVersion, diff)
	}
}

// boundFlags returns the names of the flags the Go code under dir (tests aside) binds with the
// standard flag package: flag.X(name, ...) and flag.XVar(&v, name, ...).
func boundFlags(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "flag" {
				return true
			}
			nameArg := 0
			switch {
			case sel.Sel.Name == "Var" || strings.HasSuffix(sel.Sel.Name, "Var"):
				nameArg = 1
			case slices.Contains([]string{"String", "Int", "Int64", "Uint", "Uint64", "Bool", "Duration", "Float64", "Func", "BoolFunc", "TextVar"}, sel.Sel.Name):
			default:
				return true
			}
			if len(call.Args) <= nameArg {
				return true
			}
			lit, ok := call.Args[nameArg].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: flag.%s binds a flag whose name is not a literal", path, sel.Sel.Name)
				return true
			}
			name, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return true
			}
			names = append(names, name)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
