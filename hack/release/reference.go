package main

import (
	"context"
	"flag"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// reference is an image reference as a user gives it (the Makefile's IMG): a repository with a
// tag, a digest, or both.
type reference struct {
	// text is the reference as given.
	text string
	// repository is where the image lives.
	repository name.Repository
	// tag and digest are empty when not given.
	tag, digest string
}

// parseReference parses an image reference and refuses one with neither a tag nor a digest:
// the registry's "latest" default would pin nothing, and an installer that names an image
// must name one build.
func parseReference(text string) (reference, error) {
	if text == "" {
		return reference{}, badArgumentf("no image given: IMG=registry/name:tag, or registry/name@sha256:...")
	}
	base, digest, _ := strings.Cut(text, "@")
	// The tag follows the last '/': a colon before it is a registry's port.
	_, tag, _ := strings.Cut(base[strings.LastIndex(base, "/")+1:], ":")
	if tag == "" && digest == "" {
		return reference{}, badArgumentf("IMG=%q has neither a tag nor a digest: give one, for example %s:v0.1.0, or %s@sha256:<digest>", text, text, text)
	}
	ref, err := name.ParseReference(text)
	if err != nil {
		return reference{}, badArgumentf("IMG=%q: %v", text, err)
	}
	return reference{text: text, repository: ref.Context(), tag: tag, digest: digest}, nil
}

// pinned returns the reference pinned to digest: the reference as given, followed by the
// digest, unless it names a digest of its own.
func (r reference) pinned(digest v1.Hash) string {
	if r.digest != "" {
		return r.text
	}
	return r.text + "@" + digest.String()
}

// fullName is the tagged name as containerd records it (the io.containerd.image.name
// annotation): the registry spelled out, Docker Hub as docker.io. Empty without a tag.
func (r reference) fullName() string {
	if r.tag == "" {
		return ""
	}
	registry := r.repository.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + r.repository.RepositoryStr() + ":" + r.tag
}

// dockerName is the name `docker load` tags the image with: the reference without its
// digest. Empty without a tag.
func (r reference) dockerName() string {
	if r.tag == "" {
		return ""
	}
	base, _, _ := strings.Cut(r.text, "@")
	return base
}

func bindCheck(fs *flag.FlagSet) func(context.Context, io.Reader, io.Writer) error {
	var image string
	fs.StringVar(&image, "image", "", "the image reference (the Makefile's IMG)")
	return func(context.Context, io.Reader, io.Writer) error {
		_, err := parseReference(image)
		return err
	}
}
