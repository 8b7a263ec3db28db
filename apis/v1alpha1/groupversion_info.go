package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "app.example.com", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme. It is
	// apimachinery's, as in k8s.io/api, so that importing the API costs no controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers every kind of this package, and the meta types (ListOptions and
// friends) of its group version.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &MyApp{}, &MyAppList{}, &VerticalScaler{}, &VerticalScalerList{},
		&VerticalScalerCheckpoint{}, &VerticalScalerCheckpointList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
