package v1alpha1

// Condition types shared by the kinds of this package. Types are adjectives, as the Kubernetes API
// conventions ask, so that "True" always reads as the good state.
const (
	// ConditionReady is True when the object's controller has done everything the spec asks and
	// the result is serving.
	ConditionReady = "Ready"
)
