package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"
)

// managerContainer is the name of the manager's container in the Deployment of config/manager.
const managerContainer = "manager"

func bindInstaller(fs *flag.FlagSet) func(context.Context, io.Reader, io.Writer) error {
	var layoutDir, image, in string
	fs.StringVar(&layoutDir, "layout", "", "the OCI layout make image wrote, whose digest pins the image; not read when --image has a digest")
	fs.StringVar(&image, "image", "", "the image, registry/name:tag or registry/name@sha256:... (the Makefile's IMG)")
	fs.StringVar(&in, "in", "-", "the manifests, `kubectl kustomize config/default`; - reads stdin")
	var name string
	fs.StringVar(&name, "name", "install.yaml", "the file's name, for its header's `kubectl apply` line")
	return func(_ context.Context, stdin io.Reader, stdout io.Writer) error {
		ref, err := parseReference(image)
		if err != nil {
			return err
		}
		var digest v1.Hash
		if ref.digest != "" {
			if digest, err = v1.NewHash(ref.digest); err != nil {
				return badArgumentf("IMG=%q: %v", image, err)
			}
		} else {
			if layoutDir == "" {
				return badArgumentf("IMG=%q has no digest: give --layout, the image built, to pin it by its digest", image)
			}
			if _, digest, err = readLayout(layoutDir); err != nil {
				return err
			}
		}
		input := stdin
		if in != "-" {
			data, err := os.ReadFile(in)
			if err != nil {
				return err
			}
			input = bytes.NewReader(data)
		}
		docs, err := decodeDocuments(input)
		if err != nil {
			return err
		}
		pinned := ref.pinned(digest)
		if docs, err = installer(docs, pinned); err != nil {
			return err
		}
		return encodeDocuments(stdout, docs, fmt.Sprintf("Switchboard, installed with `kubectl apply --server-side -f %s`.\n%s\nThe image: %s", name, requirement(docs), pinned))
	}
}

// requirement says which Kubernetes minors the manifests fit: their MutatingAdmissionPolicies
// are admissionregistration.k8s.io/v1, which the API server serves from 1.36.
func requirement(docs []*yaml.Node) string {
	for _, doc := range docs {
		if kind(doc) == "MutatingAdmissionPolicy" {
			return "Needs Kubernetes 1.36 or later (MutatingAdmissionPolicy v1); for 1.34 and 1.35, install-before-1.36.yaml\nis the same without the admission policies."
		}
	}
	return "For Kubernetes 1.34 and later; without the admission policies, which need 1.36 (install.yaml has them)."
}

// installer returns the manifests with the manager's image set to image, and the
// CustomResourceDefinitions first, so that a client applying them in order creates each kind
// before any object of it.
func installer(docs []*yaml.Node, image string) ([]*yaml.Node, error) {
	var crds, others []*yaml.Node
	replaced := 0
	for _, doc := range docs {
		switch kind(doc) {
		case "CustomResourceDefinition":
			crds = append(crds, doc)
			continue
		case "Deployment":
			for _, c := range sequence(lookup(doc.Content[0], "spec", "template", "spec", "containers")) {
				if name := lookup(c, "name"); name != nil && name.Value == managerContainer {
					img := lookup(c, "image")
					if img == nil {
						return nil, fmt.Errorf("the Deployment's container %s has no image", managerContainer)
					}
					img.Value, img.Tag, img.Style = image, "!!str", 0
					replaced++
				}
			}
		}
		others = append(others, doc)
	}
	if replaced == 0 {
		return nil, errors.New("no Deployment has a container " + managerContainer + ": is this the output of `kubectl kustomize config/default`?")
	}
	return append(crds, others...), nil
}

// decodeDocuments reads a stream of YAML documents, skipping empty ones. Each must be a mapping.
func decodeDocuments(r io.Reader) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(r)
	var docs []*yaml.Node
	for i := 1; ; i++ {
		doc := &yaml.Node{}
		err := dec.Decode(doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" {
			continue
		}
		if doc.Content[0].Kind != yaml.MappingNode || kind(doc) == "" {
			return nil, fmt.Errorf("document %d is not a Kubernetes object (no kind)", i)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		return nil, errors.New("no manifests on the input")
	}
	return docs, nil
}

// encodeDocuments writes the documents, separated by ---, after a comment.
func encodeDocuments(w io.Writer, docs []*yaml.Node, comment string) error {
	var buf bytes.Buffer
	for _, line := range bytes.Split([]byte(comment), []byte("\n")) {
		buf.WriteString("# ")
		buf.Write(line)
		buf.WriteString("\n")
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, doc := range docs {
		if err := enc.Encode(doc); err != nil {
			return err
		}
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// kind returns a document's kind, or "".
func kind(doc *yaml.Node) string {
	if k := lookup(doc.Content[0], "kind"); k != nil {
		return k.Value
	}
	return ""
}

// lookup follows keys through nested mappings; nil when one is missing.
func lookup(n *yaml.Node, keys ...string) *yaml.Node {
	for _, key := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

// sequence returns a sequence node's items; none for anything else.
func sequence(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}
