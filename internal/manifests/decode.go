// Package manifests reads Kubernetes manifests: the shipped YAML under config/ and the output of
// `kubectl kustomize`, for the tools under hack/ and for the tests.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Decode returns the objects of a stream of YAML documents (separated by "---") or JSON
// documents, skipping empty ones; each object must have an apiVersion and a kind. An error
// names the document, counted from 1.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 1; ; i++ {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if obj.Object == nil {
			continue
		}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" {
			return nil, fmt.Errorf("document %d has no apiVersion or kind", i)
		}
		objs = append(objs, obj)
	}
}
