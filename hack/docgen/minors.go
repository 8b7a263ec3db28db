package main

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/example/switchboard/internal/matrix"
)

// minorsPage holds the table of Kubernetes minors, in its block "kubernetes-minors". Unlike the
// other blocks, it is made from a run (make test-e2e-matrix), not from the code, so `make docs`
// leaves it as it is.
var minorsPage = filepath.Join("docs", "operations", "install.md")

// writeMinorsTable replaces the table of minors of minorsPage under root with the one of the
// records in dir.
func writeMinorsTable(root, dir string) error {
	minors, err := matrix.Read(dir)
	if err != nil {
		return err
	}
	path := filepath.Join(root, minorsPage)
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var body bytes.Buffer
	matrix.WriteTable(&body, minors)
	doc, err = ReplaceMarked(doc, "kubernetes-minors", body.Bytes())
	if err != nil {
		return err
	}
	return os.WriteFile(path, doc, 0o644)
}
