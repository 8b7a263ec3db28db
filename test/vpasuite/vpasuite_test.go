package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/switchboard/internal/suitereport"
)

func TestParseRunFlagsRefusesBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"no checkout":       {},
		"unknown suite":     {"--vpa-dir=/x", "--suites=recommender,admission"},
		"no suite":          {"--vpa-dir=/x", "--suites=,"},
		"replace without =": {"--vpa-dir=/x", "--replace=example.com/m@v1"},
		"no node":           {"--vpa-dir=/x", "--nodes=0"},
		"stray argument":    {"--vpa-dir=/x", "recommender"},
	} {
		if _, err := parseRunFlags(args); err == nil {
			t.Errorf("%s: parseRunFlags(%q) gave no error", name, args)
		}
	}
	cfg, err := parseRunFlags([]string{"--vpa-dir=/x", "--suites=updater, actuation", "--replace=a@v1=a@v0"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"updater", "actuation"}, cfg.suites); diff != "" {
		t.Errorf("suites (-want +got):\n%s", diff)
	}
	if cfg.skip != skipByDefault {
		t.Errorf("skip = %q, want the VPA's own %q", cfg.skip, skipByDefault)
	}
}

// TestManagerArgsLeaveOutTheRecommender checks that the manager recommends only in the suites
// the VPA runs with its recommender.
func TestManagerArgsLeaveOutTheRecommender(t *testing.T) {
	for suite, recommends := range map[string]bool{
		"recommender": true, "full-vpa": true,
		"updater": false, "admission-controller": false, "actuation": false,
	} {
		args := managerArgs(suite, "/k", "127.0.0.1:1")
		left := slices.Contains(args, "--recommender-name="+withoutRecommender)
		if left == recommends {
			t.Errorf("%s: manager args %q: recommends = %t, want %t", suite, args, !left, recommends)
		}
		if !slices.Contains(args, "--controllers=verticalscaler") {
			t.Errorf("%s: manager args %q do not select the verticalscaler group", suite, args)
		}
	}
}

func TestCRDDir(t *testing.T) {
	src := t.TempDir()
	vpa := filepath.Join(src, "vpa-v1-crd-gen.yaml")
	ours := filepath.Join(src, "bases")
	for path, content := range map[string]string{
		vpa: "kind: CustomResourceDefinition # vpa\n",
		filepath.Join(ours, "app.example.com_verticalscalers.yaml"): "kind: CustomResourceDefinition # vs\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "crds")
	if err := crdDir(dir, vpa, ours); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Name()+": "+strings.TrimSpace(string(data)))
	}
	want := []string{
		"app.example.com_verticalscalers.yaml: kind: CustomResourceDefinition # vs",
		"vpa-v1-crd-gen.yaml: kind: CustomResourceDefinition # vpa",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("crd dir (-want +got):\n%s", diff)
	}
	if err := crdDir(dir, vpa, t.TempDir()); err == nil {
		t.Error("a directory of our CRDs without any: no error")
	}
}

func TestOfSuiteKeepsTheSuitesSpecs(t *testing.T) {
	results := []suitereport.Result{
		{Suite: "updater", Spec: "[sig-autoscaling] [VPA] [updater] [v1] Updater evicts pods", State: "passed"},
		{Suite: "updater", Spec: "[sig-autoscaling] [VPA] [recommender] [v1] VPA CRD object serves recommendation", State: "skipped"},
		{Suite: "updater", Spec: "[sig-apps] Deployment should run", State: "skipped"},
		{Suite: "updater", Spec: "[SynchronizedBeforeSuite]", State: "failed"},
	}
	got := ofSuite("updater", results)
	want := []suitereport.Result{results[0], results[3]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ofSuite (-want +got):\n%s", diff)
	}
}
