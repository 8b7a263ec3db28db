package verticalscaler

import (
	"slices"
	"strings"
	"testing"
)

// vpaFieldSamples are a value of each spec field of VPAFields, as a VerticalPodAutoscaler's
// JSON holds it.
var vpaFieldSamples = map[string]any{
	"spec.targetRef":                                                           map[string]any{"kind": "Deployment", "name": "web"},
	"spec.updatePolicy.updateMode":                                             "Recreate",
	"spec.updatePolicy.minReplicas":                                            int64(2),
	"spec.updatePolicy.evictionRequirements[]":                                 map[string]any{"resources": []any{"cpu"}, "changeRequirement": "TargetHigherThanRequests"},
	"spec.updatePolicy.evictAfterOOMSeconds":                                   int64(60),
	"spec.resourcePolicy.containerPolicies[].containerName":                    "app",
	"spec.resourcePolicy.containerPolicies[].mode":                             "Auto",
	"spec.resourcePolicy.containerPolicies[].minAllowed":                       map[string]any{"cpu": "10m"},
	"spec.resourcePolicy.containerPolicies[].maxAllowed":                       map[string]any{"memory": "1Gi"},
	"spec.resourcePolicy.containerPolicies[].controlledResources":              []any{"cpu"},
	"spec.resourcePolicy.containerPolicies[].controlledValues":                 "RequestsOnly",
	"spec.resourcePolicy.containerPolicies[].oomBumpUpRatio":                   "1.5",
	"spec.resourcePolicy.containerPolicies[].oomMinBumpUp":                     "100Mi",
	"spec.resourcePolicy.containerPolicies[].memoryAggregationIntervalSeconds": int64(3600),
	"spec.resourcePolicy.containerPolicies[].memoryAggregationIntervalCount":   int64(8),
	"spec.resourcePolicy.containerPolicies[].startupBoost":                     map[string]any{"cpu": map[string]any{"type": "Factor", "factor": int64(2)}},
	"spec.recommenders[]":                                                      map[string]any{"name": "default"},
	"spec.startupBoost":                                                        map[string]any{"cpu": map[string]any{"type": "Factor", "factor": int64(2)}},
}

// TestVPAFieldsSayWhatTheControllerDoes: a VerticalPodAutoscaler that sets a field of VPAFields
// (beside a targetRef) is acted on, or, for a field marked Unsupported, refused with exactly
// the row's words, so that the generated table of the migration page says what the controller
// does.
func TestVPAFieldsSayWhatTheControllerDoes(t *testing.T) {
	for _, f := range VPAFields {
		if !strings.HasPrefix(f.Path, "spec.") {
			continue
		}
		t.Run(f.Path, func(t *testing.T) {
			sample, ok := vpaFieldSamples[f.Path]
			if !ok {
				t.Fatalf("no sample value of %s in vpaFieldSamples", f.Path)
			}
			vpa := NewVerticalPodAutoscaler()
			vpa.Object["spec"] = map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": "web"}}
			setSample(vpa.Object, strings.Split(f.Path, "."), sample)
			spec, err := readVPASpec(vpa)
			if err != nil {
				t.Fatalf("reading %v: %v", vpa.Object["spec"], err)
			}
			_, problems := scalerSpecOf(spec)
			var want []string
			if f.Unsupported {
				want = []string{strings.ReplaceAll(f.Path, "[]", "[0]") + ": " + f.Note}
			}
			if !slices.Equal(problems, want) {
				t.Errorf("problems %q, want %q", problems, want)
			}
		})
	}
}

// setSample sets value at path in obj; a part ending in [] is a list of one object.
func setSample(obj map[string]any, path []string, value any) {
	name, isList := strings.CutSuffix(path[0], "[]")
	switch {
	case len(path) == 1 && isList:
		obj[name] = []any{value}
	case len(path) == 1:
		obj[name] = value
	case isList:
		item := map[string]any{}
		obj[name] = []any{item}
		setSample(item, path[1:], value)
	default:
		next, ok := obj[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[name] = next
		}
		setSample(next, path[1:], value)
	}
}

// TestUnsupportedFieldWordsByTheTable: the problem of an unsupported field is its row's note,
// with the field's own list indices.
func TestUnsupportedFieldWordsByTheTable(t *testing.T) {
	got := unsupportedField("spec.resourcePolicy.containerPolicies[3].startupBoost")
	if want := "spec.resourcePolicy.containerPolicies[3].startupBoost: Switchboard does not boost CPU at startup"; got != want {
		t.Errorf("unsupportedField = %q, want %q", got, want)
	}
}
