package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the manager runs as: distroless's "nonroot", which the manifests' runAsUser and
// runAsGroup name too.
const (
	userID    = 65532
	userName  = "nonroot"
	userHome  = "/home/nonroot"
	entryFile = "manager"
)

// passwd and group are the image's /etc/passwd and /etc/group: root, which owns the files, and
// the user the manager runs as. No login shell exists in the image.
var (
	passwd = fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", userName, userID, userID, userName, userHome)
	group  = fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, userID)
)

// imageSpec is what goes into the image index.
type imageSpec struct {
	// binaries are the manager, one per platform, in the index's order.
	binaries []platformFile
	// version, revision and source are the OCI labels' values; created is the commit's time,
	// which every timestamp in the image is, so that one commit gives one digest.
	version, revision, source string
	created                   time.Time
	// caBundle is the CA bundle (PEM) at /etc/ssl/certs/ca-certificates.crt, and
	// caBundleSource the module@version it comes from, for its label.
	caBundle       []byte
	caBundleSource string
}

// platformFile is a file built for a platform.
type platformFile struct {
	platform v1.Platform
	path     string
}

// labels are the OCI labels of each image's configuration, and the index's annotations.
func (s imageSpec) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "switchboard",
		"org.opencontainers.image.description": "Kubernetes controller manager: myapp, verticalscaler, configmapwatcher",
		"org.opencontainers.image.source":      s.source,
		"org.opencontainers.image.revision":    s.revision,
		"org.opencontainers.image.version":     s.version,
		"org.opencontainers.image.created":     s.created.UTC().Format(time.RFC3339),
		labelCABundle:                          s.caBundleSource,
	}
}

// buildIndex returns the image index: one image per binary, each a single layer. The images are
// built at once, each compressing its layer on a core of its own.
func buildIndex(spec imageSpec) (v1.ImageIndex, error) {
	images := make([]v1.Image, len(spec.binaries))
	errs := make([]error, len(spec.binaries))
	var wg sync.WaitGroup
	for i, b := range spec.binaries {
		wg.Go(func() {
			if images[i], errs[i] = buildImage(spec, b); errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", b.platform, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, b := range spec.binaries {
		platform := b.platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: containerImage{images[i]}, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	return mutate.Annotations(idx, spec.labels()).(v1.ImageIndex), nil
}

// containerImage is an image whose entry in an index has no artifactType: go-containerregistry
// gives every image's entry its config's media type as artifactType, which marks an artifact
// (OCI image-spec 1.1); a container image's entry, as docker buildx writes it, has none.
type containerImage struct{ v1.Image }

// ArtifactType is empty: a container image.
func (containerImage) ArtifactType() (string, error) { return "", nil }

// buildImage returns the image of one platform: its binary at /manager, /etc/passwd,
// /etc/group and the CA bundle, run as the non-root user.
func buildImage(spec imageSpec, b platformFile) (v1.Image, error) {
	binary, err := os.ReadFile(b.path)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootFS(binary, spec.caBundle, spec.created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: spec.created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "make image: /" + entryFile + ", /etc/passwd, /etc/group, /" + caBundlePath + " (" + spec.caBundleSource + ")", Comment: "hack/release"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = b.platform.OS, b.platform.Architecture, b.platform.Variant
	cf.Created = created
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", userID, userID),
		Entrypoint: []string{"/" + entryFile},
		WorkingDir: "/",
		Labels:     spec.labels(),
	}
	return mutate.ConfigFile(img, cf)
}

// rootFS returns the layer's tar: every entry owned by root, read-only but for the user's home,
// dated created.
func rootFS(binary, caBundle []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		header tar.Header
		data   []byte
	}{
		{tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: "etc/group", Mode: 0o444}, []byte(group)},
		{tar.Header{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o444}, []byte(passwd)},
		{tar.Header{Typeflag: tar.TypeDir, Name: "etc/ssl/", Mode: 0o755}, nil},
		{tar.Header{Typeflag: tar.TypeDir, Name: "etc/ssl/certs/", Mode: 0o755}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: caBundlePath, Mode: 0o444}, caBundle},
		{tar.Header{Typeflag: tar.TypeDir, Name: "home/", Mode: 0o755}, nil},
		{tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(userHome, "/") + "/", Mode: 0o700, Uid: userID, Gid: userID, Uname: userName, Gname: userName}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: entryFile, Mode: 0o555}, binary},
	}
	for _, e := range entries {
		h := e.header
		h.Size = int64(len(e.data))
		h.ModTime = created.UTC()
		h.Format = tar.FormatPAX
		if h.Uname == "" {
			h.Uname, h.Gname = "root", "root"
		}
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// platformFiles is a repeated --binary=OS/ARCH=PATH flag.
type platformFiles []platformFile

func (p *platformFiles) String() string {
	var parts []string
	for _, f := range *p {
		parts = append(parts, f.platform.String()+"="+f.path)
	}
	return strings.Join(parts, ",")
}

func (p *platformFiles) Set(value string) error {
	spec, path, ok := strings.Cut(value, "=")
	if !ok || path == "" {
		return fmt.Errorf("%q is not OS/ARCH=PATH", value)
	}
	platform, err := parsePlatform(spec)
	if err != nil {
		return err
	}
	for _, f := range *p {
		if f.platform.Equals(platform) {
			return fmt.Errorf("two binaries for %s", platform)
		}
	}
	*p = append(*p, platformFile{platform: platform, path: path})
	return nil
}

// parsePlatform parses OS/ARCH or OS/ARCH/VARIANT.
func parsePlatform(s string) (v1.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return v1.Platform{}, fmt.Errorf("platform %q is not OS/ARCH or OS/ARCH/VARIANT", s)
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

func bindImage(fs *flag.FlagSet) func(context.Context, io.Reader, io.Writer) error {
	var spec imageSpec
	var binaries platformFiles
	var layoutDir, tarPath, imageName, created, loadPlatform string
	fs.StringVar(&layoutDir, "layout", "", "directory to write the OCI image layout into (replaced)")
	fs.StringVar(&tarPath, "tar", "", "file to write the image tarball into, for docker load, kind load image-archive and ctr images import; empty writes none")
	fs.StringVar(&imageName, "name", "", "the image's name, registry/name:tag (the Makefile's IMG), which docker load and ctr images import give it")
	fs.StringVar(&loadPlatform, "load-platform", "", "the platform docker load takes from the tarball (OS/ARCH); the first binary's by default")
	fs.Var(&binaries, "binary", "OS/ARCH=PATH: the manager binary of a platform; repeat for each, in the index's order")
	fs.StringVar(&spec.version, "version", "", "the version (OCI label org.opencontainers.image.version)")
	fs.StringVar(&spec.revision, "revision", "", "the commit (org.opencontainers.image.revision)")
	fs.StringVar(&spec.source, "source", "", "the source repository's URL (org.opencontainers.image.source)")
	fs.StringVar(&created, "created", "", "the commit's time, RFC 3339: every timestamp of the image (org.opencontainers.image.created)")
	return func(_ context.Context, _ io.Reader, stdout io.Writer) error {
		switch {
		case layoutDir == "":
			return badArgumentf("--layout is required")
		case len(binaries) == 0:
			return badArgumentf("--binary is required: OS/ARCH=PATH, once per platform")
		case spec.version == "" || spec.revision == "" || spec.source == "":
			return badArgumentf("--version, --revision and --source are required (the Makefile's VERSION, REVISION and IMAGE_SOURCE)")
		}
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return badArgumentf("--created=%q is not an RFC 3339 time: make image reads the commit's time from git; outside a git checkout, give BUILD_DATE=2006-01-02T15:04:05Z", created)
		}
		spec.created, spec.binaries = t, binaries
		spec.caBundle, _ = caBundle()
		if spec.caBundleSource, err = caBundleSource(); err != nil {
			return err
		}
		ref, err := parseReference(imageName)
		if err != nil {
			return err
		}
		load := binaries[0].platform
		if loadPlatform != "" {
			if load, err = parsePlatform(loadPlatform); err != nil {
				return badArgument{err}
			}
		}
		idx, err := buildIndex(spec)
		if err != nil {
			return err
		}
		if err := writeLayout(layoutDir, idx, ref); err != nil {
			return err
		}
		if tarPath != "" {
			if err := writeTarball(tarPath, layoutDir, load, ref, spec.created); err != nil {
				return err
			}
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Built %s (%s)\n", ref.pinned(digest), binaries.String())
		return nil
	}
}
