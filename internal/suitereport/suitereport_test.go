package suitereport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadReport(t *testing.T) {
	report := `[{"SuiteDescription":"Core","SpecReports":[
	 {"ContainerHierarchyTexts":["Reload","ConfigMap"],"LeafNodeType":"It","LeafNodeText":"Deployment","State":"passed","RunTime":2500000000},
	 {"ContainerHierarchyTexts":["Reload"],"LeafNodeType":"It","LeafNodeText":"Rollout","State":"skipped"},
	 {"ContainerHierarchyTexts":["Reload"],"LeafNodeType":"It","LeafNodeText":"DaemonSet","State":"failed","Failure":{"Message":"timed out\nmore","Location":{"FileName":"w.go","LineNumber":7}}},
	 {"LeafNodeType":"SynchronizedBeforeSuite","State":"passed"},
	 {"LeafNodeType":"SynchronizedAfterSuite","State":"failed","Failure":{"Message":"cleanup"}}
	]}]`
	got, err := ReadGinkgoReport("core", []byte(report))
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Suite: "core", Spec: "Reload ConfigMap Deployment", State: "passed", Seconds: 2.5},
		{Suite: "core", Spec: "Reload Rollout", State: "skipped"},
		{Suite: "core", Spec: "Reload DaemonSet", State: "failed", Failure: "timed out ... (w.go:7)"},
		{Suite: "core", Spec: "[SynchronizedAfterSuite]", State: "failed", Failure: "cleanup (:0)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadGinkgoReport (-want +got):\n%s", diff)
	}
}

func TestRegressions(t *testing.T) {
	baseline := []Result{
		{Suite: "core", Spec: "a", State: "passed"},
		{Suite: "core", Spec: "b", State: "passed"},
		{Suite: "core", Spec: "c", State: "failed"},
		{Suite: "flags", Spec: "d", State: "passed"},
		{Suite: "flags", Spec: "e", State: "passed"},
	}
	subject := []Result{
		{Suite: "core", Spec: "a", State: "passed"},
		{Suite: "core", Spec: "b", State: "failed"},
		{Suite: "core", Spec: "c", State: "failed"},
		{Suite: "flags", Spec: "e", State: "skipped"},
	}
	want := []Result{
		{Suite: "core", Spec: "b", State: "failed"},
		{Suite: "flags", Spec: "d", State: "absent"},
		{Suite: "flags", Spec: "e", State: "skipped"},
	}
	if diff := cmp.Diff(want, Regressions(baseline, subject)); diff != "" {
		t.Errorf("Regressions (-want +got):\n%s", diff)
	}
}
