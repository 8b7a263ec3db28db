package matrix

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadAndWriteTable(t *testing.T) {
	dir := t.TempDir()
	old := Minor{Kubernetes: "v1.34.4", Date: "2026-12-06", PodResize: true,
		Fallbacks: []Fallback{{Controller: "myapp", Feature: "MutatingAdmissionPolicy", Instead: "adds the finalizer itself"}}}
	current := Minor{Kubernetes: "v1.37.2", Date: "2026-12-06", MutatingAdmissionPolicy: "v1", PodResize: true}
	// Written newest first: the table is oldest first, 1.37 after 1.34 (not after 1.4).
	for _, m := range []Minor{current, old} {
		if err := WriteMinor(dir, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "1.34.result"), []byte("passed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	minors, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	WriteTable(&table, minors)
	want := `| Kubernetes | end-to-end suite | MutatingAdmissionPolicy | pods/resize | what the manager does without them |
|---|---|---|---|---|
| v1.34.4 | passed on 2026-12-06 | not served | served | **myapp** without MutatingAdmissionPolicy: adds the finalizer itself |
| v1.37.2 | no result recorded on 2026-12-06 | v1 | served | nothing: every optional API is served |
`
	if diff := cmp.Diff(want, table.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}

	if err := os.WriteFile(filepath.Join(dir, "1.37.result"), []byte("maybe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil {
		t.Error("a result of neither passed nor failed: no error")
	}
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("an empty directory: no error")
	}
	if err := WriteMinor(dir, Minor{Kubernetes: "unknown"}); err == nil {
		t.Error("a version without a minor: no error")
	}
}
