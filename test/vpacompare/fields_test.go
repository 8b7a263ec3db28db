package vpacompare

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	vpatypes "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"
)

// migrationPage is the page whose table says what each VPA field does in Switchboard.
var migrationPage = filepath.Join("..", "..", "docs", "migrating", "from-vpa.md")

// namedWhole are the VPA's structs the table names as one field, not field by field: a
// requirement, a recommender's name, a container's recommendation, a condition, and the startup
// boost Switchboard does not have.
var namedWhole = map[reflect.Type]bool{
	reflect.TypeFor[vpatypes.EvictionRequirement]():                      true,
	reflect.TypeFor[vpatypes.VerticalPodAutoscalerRecommenderSelector](): true,
	reflect.TypeFor[vpatypes.RecommendedContainerResources]():            true,
	reflect.TypeFor[vpatypes.VerticalPodAutoscalerCondition]():           true,
	reflect.TypeFor[vpatypes.StartupBoost]():                             true,
}

// vpaFields returns the JSON paths of t's fields, recursing into the VPA's own structs but
// those named whole.
func vpaFields(prefix string, t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := prefix + "." + name
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath() && !namedWhole[ft] {
			out = append(out, vpaFields(path, ft)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// TestMigrationTableNamesEveryVPAField: the migration page's table of fields names every field of
// the VPA's VerticalPodAutoscaler spec and status (of the release this module requires), by its
// path or its last part, so that a field the VPA adds shows up here, to be said what it does.
func TestMigrationTableNamesEveryVPAField(t *testing.T) {
	page, err := os.ReadFile(migrationPage)
	if err != nil {
		t.Fatal(err)
	}
	_, table, found := strings.Cut(string(page), "| VPA | VerticalScaler | what differs |")
	if !found {
		t.Fatalf("%s has no table of fields (| VPA | VerticalScaler | what differs |)", migrationPage)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	named := map[string]bool{}
	code := regexp.MustCompile("`([^`]+)`")
	for row := range strings.SplitSeq(table, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 2 {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			path := strings.ReplaceAll(m[1], "[]", "")
			named[path] = true
			named[path[strings.LastIndex(path, ".")+1:]] = true
		}
	}
	vpa := reflect.TypeFor[vpatypes.VerticalPodAutoscaler]()
	spec, _ := vpa.FieldByName("Spec")
	status, _ := vpa.FieldByName("Status")
	fields := append(vpaFields("spec", spec.Type), vpaFields("status", status.Type)...)
	if len(fields) < 20 {
		t.Fatalf("found %d fields of the VPA's spec and status, %v: too few to be the whole API", len(fields), fields)
	}
	for _, path := range fields {
		if !named[path] && !named[path[strings.LastIndex(path, ".")+1:]] {
			t.Errorf("%s names no VPA field %s: add a row that says what it does here", migrationPage, path)
		}
	}
}
