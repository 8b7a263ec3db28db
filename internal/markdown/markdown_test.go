package markdown

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Leader election":                             "leader-election",
		"Analysing logs: `manager logs`":              "analysing-logs-manager-logs",
		"Secrets, and why the digest is keyed":        "secrets-and-why-the-digest-is-keyed",
		"1. Start the cluster and the manager":        "1-start-the-cluster-and-the-manager",
		"Checkpoints: history that survives restarts": "checkpoints-history-that-survives-restarts",
		"MyApp": "myapp",
	} {
		if got := Anchor(heading); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	page, err := Parse("# Title\n\nSee [a](a.md#x) and [b](https://example.com \"t\").\n\n```sh\n# not a heading [c](c.md)\n```\n\n## Title\n\n`[d](d.md)` and [e](#title-1)\n")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]bool{"title": true, "title-1": true}, page.Anchors); diff != "" {
		t.Errorf("anchors (-want +got):\n%s", diff)
	}
	want := []Link{{Line: 3, Target: "a.md#x"}, {Line: 3, Target: "https://example.com"}, {Line: 11, Target: "#title-1"}}
	if diff := cmp.Diff(want, page.Links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
}
