package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations of the layout's index.json entry that name the image: the tag alone (OCI), and
// the full name, which containerd's importer (ctr images import, kind load image-archive, and
// docker load with the containerd image store) names the image with.
const (
	annotationRefName       = "org.opencontainers.image.ref.name"
	annotationContainerName = "io.containerd.image.name"
)

// writeLayout writes idx as an OCI image layout into dir, replacing what an earlier build left
// there, with the image's name when ref has a tag.
func writeLayout(dir string, idx v1.ImageIndex, ref reference) error {
	if err := removeLayout(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	annotations := map[string]string{}
	if ref.tag != "" {
		annotations[annotationRefName] = ref.tag
		annotations[annotationContainerName] = ref.fullName()
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(annotations)); err != nil {
		return err
	}
	// go-containerregistry writes some files for its owner alone, others executable: make the
	// layout readable by all, as a release directory is.
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
}

// removeLayout removes dir if it is an OCI layout or empty, and refuses to remove anything else.
func removeLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); len(entries) > 0 && err != nil {
		return fmt.Errorf("%s is neither empty nor an OCI layout: not replacing it", dir)
	}
	return os.RemoveAll(dir)
}

// readLayout returns the image index an OCI layout holds (the one entry of its index.json)
// and its digest.
func readLayout(dir string) (v1.ImageIndex, v1.Hash, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, v1.Hash{}, fmt.Errorf("reading the OCI layout %s (make image writes it): %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, v1.Hash{}, fmt.Errorf("%s/index.json: want one image index, got %d entries", dir, len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	return idx, m.Manifests[0].Digest, err
}

// imageFor returns the image of an index for a platform.
func imageFor(idx v1.ImageIndex, platform v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.Equals(platform) {
			return idx.Image(d.Digest)
		}
		if d.Platform != nil {
			have = append(have, d.Platform.String())
		}
	}
	return nil, fmt.Errorf("the image index has no image for %s, only for %v", platform, have)
}

// writeTarball writes the OCI layout in layoutDir as one tar file that `ctr images import` and
// `kind load image-archive` read as an OCI layout (they name the image from index.json's
// annotations), plus the manifest.json of `docker save`, which `docker load` reads, describing
// the image of one platform. Every entry is dated created, so that the file is the same for one
// commit.
func writeTarball(path, layoutDir string, platform v1.Platform, ref reference, created time.Time) error {
	idx, _, err := readLayout(layoutDir)
	if err != nil {
		return err
	}
	img, err := imageFor(idx, platform)
	if err != nil {
		return fmt.Errorf("docker load's image: %w", err)
	}
	dockerManifest, err := dockerSaveManifest(img, ref)
	if err != nil {
		return err
	}
	var files []string
	err = filepath.WalkDir(layoutDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == layoutDir {
			return err
		}
		rel, err := filepath.Rel(layoutDir, p)
		if d.IsDir() {
			rel += "/"
		}
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	return writeFileAtomically(path, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		add := func(name string, data []byte) error {
			h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: created.UTC(), Format: tar.FormatPAX}
			if strings.HasSuffix(name, "/") {
				h.Typeflag, h.Mode = tar.TypeDir, 0o755
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			_, err := tw.Write(data)
			return err
		}
		if err := add("manifest.json", dockerManifest); err != nil {
			return err
		}
		for _, name := range files {
			var data []byte
			if !strings.HasSuffix(name, "/") {
				if data, err = os.ReadFile(filepath.Join(layoutDir, name)); err != nil {
					return err
				}
			}
			if err := add(name, data); err != nil {
				return err
			}
		}
		return tw.Close()
	})
}

// writeFileAtomically writes path with write, through a temporary file renamed into place, so
// that a failed write leaves no half a file where a complete one was expected.
func writeFileAtomically(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	err = write(f)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp) // the error to report is err; a leftover temporary file is harmless
	}
	return err
}

// dockerSaveManifest returns the manifest.json of `docker save` for img: its configuration and
// layers, by their paths in the layout, and its name.
func dockerSaveManifest(img v1.Image, ref reference) ([]byte, error) {
	config, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	entry := tarball.Descriptor{Config: blobPath(config)}
	for _, l := range layers {
		digest, err := l.Digest()
		if err != nil {
			return nil, err
		}
		entry.Layers = append(entry.Layers, blobPath(digest))
	}
	if name := ref.dockerName(); name != "" {
		entry.RepoTags = []string{name}
	}
	return json.Marshal(tarball.Manifest{entry})
}

// blobPath is where an OCI layout keeps a blob.
func blobPath(h v1.Hash) string {
	return "blobs/" + h.Algorithm + "/" + h.Hex
}
