package main

import (
	"archive/tar"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func bindExtract(fs *flag.FlagSet) func(context.Context, io.Reader, io.Writer) error {
	var layoutDir, platform, file, out string
	fs.StringVar(&layoutDir, "layout", "", "the OCI layout make image wrote")
	fs.StringVar(&platform, "platform", "", "whose image to read, OS/ARCH")
	fs.StringVar(&file, "file", entryFile, "the file's path in the image")
	fs.StringVar(&out, "out", "", "where to write the file, with the permissions it has in the image")
	return func(_ context.Context, _ io.Reader, _ io.Writer) error {
		if layoutDir == "" || platform == "" || out == "" {
			return badArgumentf("--layout, --platform and --out are required")
		}
		p, err := parsePlatform(platform)
		if err != nil {
			return badArgument{err}
		}
		idx, _, err := readLayout(layoutDir)
		if err != nil {
			return err
		}
		img, err := imageFor(idx, p)
		if err != nil {
			return err
		}
		// The image's filesystem as a container runtime assembles it from the layers.
		fsTar := mutate.Extract(img)
		defer fsTar.Close()
		return extractFile(tar.NewReader(fsTar), file, out)
	}
}

// extractFile writes the regular file name of a filesystem tar to out, with its permissions in
// the image: the manager executable, the CA bundle read-only.
func extractFile(tr *tar.Reader, name, out string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("the image has no file %s", name)
		}
		if err != nil {
			return err
		}
		if cleanPath(h.Name) != cleanPath(name) || h.Typeflag != tar.TypeReg {
			continue
		}
		if err := writeFileAtomically(out, func(w io.Writer) error {
			_, err := io.Copy(w, tr)
			return err
		}); err != nil {
			return err
		}
		return os.Chmod(out, fs.FileMode(h.Mode).Perm())
	}
}

func bindDigest(fs *flag.FlagSet) func(context.Context, io.Reader, io.Writer) error {
	var layoutDir string
	fs.StringVar(&layoutDir, "layout", "", "the OCI layout make image wrote")
	return func(_ context.Context, _ io.Reader, stdout io.Writer) error {
		if layoutDir == "" {
			return badArgumentf("--layout is required")
		}
		_, digest, err := readLayout(layoutDir)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, digest)
		return nil
	}
}

// cleanPath is a path in an image without its leading "/" or "./": as a layer's tar names it.
func cleanPath(p string) string {
	return path.Clean("/" + p)[1:]
}
