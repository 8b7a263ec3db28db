package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func bindPush(fs *flag.FlagSet) func(context.Context, io.Reader, io.Writer) error {
	var layoutDir, image string
	fs.StringVar(&layoutDir, "layout", "", "the OCI layout make image wrote")
	fs.StringVar(&image, "image", "", "where to push: registry/name:tag (the Makefile's IMG), or registry/name@sha256:... of this very index")
	return func(ctx context.Context, _ io.Reader, stdout io.Writer) error {
		if layoutDir == "" {
			return badArgumentf("--layout is required")
		}
		ref, err := parseReference(image)
		if err != nil {
			return err
		}
		idx, digest, err := readLayout(layoutDir)
		if err != nil {
			return err
		}
		if ref.digest != "" && ref.digest != digest.String() {
			return badArgumentf("IMG=%q names a digest, and the image built is %s: push to a tag, or to this digest", image, digest)
		}
		// The registry records the index under the tag, or else under its digest.
		var target name.Reference = ref.repository.Digest(digest.String())
		if ref.tag != "" {
			target = ref.repository.Tag(ref.tag)
		}
		// The usual credentials: ~/.docker/config.json ($DOCKER_CONFIG) and its credential
		// helpers, as docker push uses them.
		if err := remote.WriteIndex(target, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing to %s: %w", ref.text, err)
		}
		fmt.Fprintf(stdout, "Pushed %s\n", ref.pinned(digest))
		return nil
	}
}
