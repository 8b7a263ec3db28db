package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// kustomization is the part of a kustomization.yaml that readKustomization supports.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// readKustomization returns the resources a kustomization lists, as one YAML stream, so that
// the launcher applies what `kubectl apply -k DIR` would. Only plain files are supported; a
// kustomization with anything else (bases, patches, generators) is refused rather than applied
// differently from kubectl.
func readKustomization(dir string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s: only apiVersion, kind and resources (plain files) are supported: %w", filepath.Join(dir, "kustomization.yaml"), err)
	}
	if len(k.Resources) == 0 {
		return nil, errors.New(filepath.Join(dir, "kustomization.yaml") + " lists no resources")
	}
	var out bytes.Buffer
	for _, name := range k.Resources {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("resource %s is not a file; only plain files are supported", path)
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(doc)
		if !bytes.HasSuffix(doc, []byte("\n")) {
			out.WriteString("\n")
		}
	}
	return out.Bytes(), nil
}
