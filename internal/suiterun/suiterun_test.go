package suiterun

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSuites(t *testing.T) {
	known := []string{"core", "flags"}
	got, err := Suites(" flags, ,core", known)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"flags", "core"}, got); diff != "" {
		t.Errorf("Suites (-want +got):\n%s", diff)
	}
	for _, list := range []string{"", ",", "core,argo"} {
		if _, err := Suites(list, known); err == nil {
			t.Errorf("Suites(%q) gave no error", list)
		}
	}
}

func TestLockDirTakesTheDirectoryOnce(t *testing.T) {
	dir := t.TempDir()
	first, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockDir(dir); err == nil {
		t.Fatalf("a second run could take %s", filepath.Base(dir))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := LockDir(dir)
	if err != nil {
		t.Fatalf("after the first run ended: %v", err)
	}
	_ = again.Close()
}
