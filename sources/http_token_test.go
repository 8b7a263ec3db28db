package sources

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "token"), filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("  abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTokenFile(good); err != nil || string(got) != "abc" {
		t.Errorf("ReadTokenFile = %q, %v; want abc", got, err)
	}
	if _, err := ReadTokenFile(empty); err == nil {
		t.Error("an empty token file was accepted")
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing token file was accepted")
	}
}
