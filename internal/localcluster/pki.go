package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// pkiDir is the directory under Config.Dir that holds the certificates of the aggregation layer:
// envtest makes those of the API server itself, and none of these.
const pkiDir = "pki"

// certValidity is long enough for any run of the cluster; the certificates are made anew at
// each start.
const certValidity = 7 * 24 * time.Hour

// writeFiles writes each file of files (name to contents) into dir, readable by the owner only.
func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
