package recommender

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/example/switchboard/apis/v1alpha1"
)

// Report is the poller's latest news for one VerticalScaler: a recommendation, or why there is
// none.
type Report struct {
	// Target is the key of the workload the report is about (Kind.group/name), so that a
	// report about the workload a VerticalScaler named before is not taken for one about the
	// one it names now.
	Target string
	// Recommendation is uncapped (bounding it by the VerticalScaler's policies is the
	// controller's job); nil when Provided is False.
	Recommendation *v1alpha1.Recommendation
	// Provided is the RecommendationProvided condition: True with reason Recommended, or False
	// with reason MetricsUnavailable and the read error as its message.
	Provided metav1.Condition
}

// Reports holds the latest Report per VerticalScaler. The poller stores a report, then sends
// the VerticalScaler's key through its channel source; the controller reads the report when it
// reconciles. A report therefore outlives a dropped event: the next reconcile, whatever
// triggers it, finds it. It is safe for concurrent use.
type Reports struct {
	m sync.Map // types.NamespacedName -> Report
}

// Store records r as the latest report for the VerticalScaler key.
func (s *Reports) Store(key types.NamespacedName, r Report) { s.m.Store(key, r) }

// Latest returns the latest report for the VerticalScaler key if it is about target.
func (s *Reports) Latest(key types.NamespacedName, target string) (Report, bool) {
	v, ok := s.m.Load(key)
	if !ok {
		return Report{}, false
	}
	r := v.(Report)
	if r.Target != target {
		return Report{}, false
	}
	return r, true
}

// Forget drops what is held for the VerticalScaler key, once it is deleted.
func (s *Reports) Forget(key types.NamespacedName) { s.m.Delete(key) }

// Clear drops every report. A new poller starts a new history (from the checkpoints): the reports
// of an earlier one, made by this replica in an earlier term of leading, are older than what the
// leaders since then recommended, and a reconcile must not write them back.
func (s *Reports) Clear() { s.m.Clear() }
