package recommender

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestReportsAreAboutOneDeployment(t *testing.T) {
	var reports Reports
	key := types.NamespacedName{Namespace: "ns", Name: "vs"}
	if _, ok := reports.Latest(key, "web"); ok {
		t.Error("empty store returned a report")
	}
	reports.Store(key, Report{DeploymentName: "web"})
	if _, ok := reports.Latest(key, "web"); !ok {
		t.Error("stored report not returned")
	}
	if _, ok := reports.Latest(key, "api"); ok {
		t.Error("a report about web returned for api, the Deployment the VerticalScaler names now")
	}
	reports.Forget(key)
	if _, ok := reports.Latest(key, "web"); ok {
		t.Error("forgotten report returned")
	}
}
