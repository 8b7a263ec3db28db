package recommender

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestReportsAreAboutOneTarget(t *testing.T) {
	var reports Reports
	key := types.NamespacedName{Namespace: "ns", Name: "vs"}
	if _, ok := reports.Latest(key, "Deployment.apps/web"); ok {
		t.Error("empty store returned a report")
	}
	reports.Store(key, Report{Target: "Deployment.apps/web"})
	if _, ok := reports.Latest(key, "Deployment.apps/web"); !ok {
		t.Error("stored report not returned")
	}
	if _, ok := reports.Latest(key, "StatefulSet.apps/web"); ok {
		t.Error("a report about Deployment web returned for StatefulSet web, the target the VerticalScaler names now")
	}
	reports.Forget(key)
	if _, ok := reports.Latest(key, "Deployment.apps/web"); ok {
		t.Error("forgotten report returned")
	}
}
