package verticalscaler

import (
	"context"
	"testing"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/apifeatures"
)

// TestModesWithoutAnAdmissionPolicy: where the API server serves no MutatingAdmissionPolicy,
// the modes that count on the admission policy to size new Pods say so in their Applied reason
// and evict nothing, instead of reporting the recommendation applied.
func TestModesWithoutAnAdmissionPolicy(t *testing.T) {
	custom := &workload{key: "Gadget.example.com/web"}
	rec := &v1alpha1.Recommendation{}
	for _, tc := range []struct {
		name    string
		mode    v1alpha1.UpdateMode
		missing apifeatures.Missing
		want    string
	}{
		{"Initial with the policy's API", v1alpha1.UpdateModeInitial, apifeatures.Missing{}, v1alpha1.ReasonAppliedAtAdmission},
		{"Initial without", v1alpha1.UpdateModeInitial, apifeatures.Missing{MutatingAdmissionPolicy: true}, v1alpha1.ReasonAdmissionPolicyUnavailable},
		{"Recreate of a kind that does not roll, without", v1alpha1.UpdateModeRecreate, apifeatures.Missing{MutatingAdmissionPolicy: true}, v1alpha1.ReasonAdmissionPolicyUnavailable},
		{"Auto of a kind that does not roll, without", v1alpha1.UpdateModeAuto, apifeatures.Missing{MutatingAdmissionPolicy: true, PodResize: true}, v1alpha1.ReasonAdmissionPolicyUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Missing: tc.missing}
			vs := &v1alpha1.VerticalScaler{Spec: v1alpha1.VerticalScalerSpec{UpdateMode: tc.mode}}
			state, err := r.apply(context.Background(), vs, custom, rec, limitRanges{}, admissionSizing{})
			if err != nil {
				t.Fatal(err)
			}
			if state == nil || state.reason != tc.want {
				t.Errorf("apply = %+v, want reason %s", state, tc.want)
			}
		})
	}
}
