package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DeploymentAPIVersion is the API version spec.deploymentName stands for.
const DeploymentAPIVersion = "apps/v1"

// Target returns the workload the spec names: its targetRef, or the Deployment of
// deploymentName.
func (s *VerticalScalerSpec) Target() TargetReference {
	if s.TargetRef != nil {
		return *s.TargetRef
	}
	return TargetReference{APIVersion: DeploymentAPIVersion, Kind: "Deployment", Name: s.DeploymentName}
}

// Group returns the API group of the reference; empty for the core group or an apiVersion that
// does not parse.
func (t TargetReference) Group() string {
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// Key names the workload as Kind.group/name (Deployment.apps/web), as kubectl names a resource
// of a group: what status.target and status.recommendation.target say, and what the field index
// of VerticalScalers by target holds. The version is left out: it does not change the object.
func (t TargetReference) Key() string {
	return TargetKey(t.Kind, t.Group(), t.Name)
}

// TargetKey is TargetReference.Key of the workload of kind, group and name.
func TargetKey(kind, group, name string) string {
	var b strings.Builder
	b.WriteString(kind)
	if group != "" {
		b.WriteString(".")
		b.WriteString(group)
	}
	b.WriteString("/")
	b.WriteString(name)
	return b.String()
}

// RecommendationTarget returns the key of the workload a recommendation was made for: its
// target, or for a recommendation written before targets (deploymentName only) that Deployment.
func RecommendationTarget(r *Recommendation) string {
	switch {
	case r == nil:
		return ""
	case r.Target != "":
		return r.Target
	case r.DeploymentName != "":
		return TargetKey("Deployment", "apps", r.DeploymentName)
	}
	return ""
}
