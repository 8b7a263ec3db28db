package v1alpha1

// Annotations that are part of the API: users and other controllers read and write them.
const (
	// ReloadAnnotation opts a workload in to the configmapwatcher. "true" means every ConfigMap
	// the Pod template references; otherwise it is a comma-separated list of ConfigMap names.
	ReloadAnnotation = "app.example.com/reload"

	// ConfigHashAnnotation is set on a workload's Pod template by the configmapwatcher: a hash
	// of the data of the ConfigMaps the workload uses. A new value rolls the Pods.
	ConfigHashAnnotation = "app.example.com/config-hash"
)
