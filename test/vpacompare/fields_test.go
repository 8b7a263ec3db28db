package vpacompare

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	vpatypes "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"

	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/internal/testenv"
)

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

// TestVPAFieldsAreTheVPAs: the fields the migration page's generated table lists
// (verticalscaler.VPAFields) are those of the VPA's VerticalPodAutoscaler spec and status, of
// the release this module requires: a field the VPA adds shows up here, to be said what it does,
// and the table names no field the VPA does not have.
func TestVPAFieldsAreTheVPAs(t *testing.T) {
	vpa := reflect.TypeFor[vpatypes.VerticalPodAutoscaler]()
	spec, _ := vpa.FieldByName("Spec")
	status, _ := vpa.FieldByName("Status")
	theirs := append(vpaFields("spec", spec.Type), vpaFields("status", status.Type)...)
	if len(theirs) < 20 {
		t.Fatalf("found %d fields of the VPA's spec and status, %v: too few to be the whole API", len(theirs), theirs)
	}
	var ours []string
	for _, f := range verticalscaler.VPAFields {
		ours = append(ours, strings.ReplaceAll(f.Path, "[]", ""))
	}
	sortStrings := cmpopts.SortSlices(func(a, b string) bool { return a < b })
	if diff := cmp.Diff(theirs, ours, sortStrings); diff != "" {
		t.Errorf("verticalscaler.VPAFields against the fields of VPA %s (-VPA +table):\n%s", testenv.VPAVersion, diff)
	}
}
