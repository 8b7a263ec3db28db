package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// testImage is what a test built with `release image`.
type testImage struct {
	layout, tar string
	// binaries are the stand-in binaries' contents by platform.
	binaries map[string][]byte
	created  time.Time
}

const testName = "registry.example.com/team/switchboard:v1.2.3"

// runRelease runs the command with args and returns its exit status and output.
func runRelease(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, stdin, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// buildTestImage runs `release image` on stand-in binaries (random bytes: the command packs
// files, whatever they hold) for linux/amd64 and linux/arm64, into dir.
func buildTestImage(t *testing.T, dir string, extra ...string) testImage {
	t.Helper()
	img := testImage{
		layout:   filepath.Join(dir, "image"),
		tar:      filepath.Join(dir, "image.tar"),
		binaries: map[string][]byte{},
		created:  time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC),
	}
	args := []string{"image", "--layout=" + img.layout, "--tar=" + img.tar, "--name=" + testName,
		"--version=v1.2.3", "--revision=0123456789abcdef0123456789abcdef01234567", "--source=https://example.com/switchboard",
		"--created=" + img.created.Format(time.RFC3339)}
	for i, platform := range []string{"linux/amd64", "linux/arm64"} {
		data := make([]byte, 64<<10)
		r := rand.New(rand.NewPCG(uint64(i), 1))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		path := filepath.Join(dir, strings.ReplaceAll(platform, "/", "-"))
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
		img.binaries[platform] = data
		args = append(args, "--binary="+platform+"="+path)
	}
	if code, _, stderr := runRelease(t, nil, append(args, extra...)...); code != 0 {
		t.Fatalf("release image: exit %d\n%s", code, stderr)
	}
	return img
}

// TestImage checks the image index with go-containerregistry's own readers: valid, one image
// per platform, each the binary at /manager, the user's /etc/passwd entry and the CA bundle at
// the path Go reads on Linux, nothing else (no shell), run as 65532, labelled with the bundle's
// source.
func TestImage(t *testing.T) {
	built := buildTestImage(t, t.TempDir())
	idx, digest, err := readLayout(built.layout)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("the image index is not valid: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":       "switchboard",
		"org.opencontainers.image.description": "Kubernetes controller manager: myapp, verticalscaler, configmapwatcher",
		"org.opencontainers.image.source":      "https://example.com/switchboard",
		"org.opencontainers.image.revision":    "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.version":     "v1.2.3",
		"org.opencontainers.image.created":     "2026-05-06T07:08:09Z",
		"com.example.switchboard.ca-bundle":    goModRequirement(t, caBundleModule),
	}
	bundle, roots := caBundle()
	if m.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", m.MediaType, types.OCIImageIndex)
	}
	if diff := cmp.Diff(wantLabels, m.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
		if d.MediaType != types.OCIManifestSchema1 || d.ArtifactType != "" {
			t.Errorf("%s: media type %s, artifact type %q; want a container image's entry, %s", d.Platform, d.MediaType, d.ArtifactType, types.OCIManifestSchema1)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		want := v1.Config{User: "65532:65532", Entrypoint: []string{"/manager"}, WorkingDir: "/", Labels: wantLabels}
		if diff := cmp.Diff(want, cf.Config); diff != "" {
			t.Errorf("%s config (-want +got):\n%s", d.Platform, diff)
		}
		if cf.OS+"/"+cf.Architecture != d.Platform.String() || !cf.Created.Equal(built.created) {
			t.Errorf("%s config: platform %s/%s, created %s; want the entry's platform, created %s", d.Platform, cf.OS, cf.Architecture, cf.Created, built.created)
		}
		files := filesystem(t, img)
		wantFiles := map[string]string{
			"etc":                               "dir 755 0:0",
			"etc/group":                         "file 444 0:0 root:x:0:\nnonroot:x:65532:\n",
			"etc/passwd":                        "file 444 0:0 root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
			"etc/ssl":                           "dir 755 0:0",
			"etc/ssl/certs":                     "dir 755 0:0",
			"etc/ssl/certs/ca-certificates.crt": "file 444 0:0 " + string(bundle),
			"home":                              "dir 755 0:0",
			"home/nonroot":                      "dir 700 65532:65532",
			"manager":                           "file 555 0:0 " + string(built.binaries[d.Platform.String()]),
		}
		// Every file listed, and nothing else: no shell (the passwd entries' /sbin/nologin
		// does not exist either), no package manager.
		if diff := cmp.Diff(wantFiles, files); diff != "" {
			t.Errorf("%s filesystem (-want +got):\n%s", d.Platform, diff)
		}
		// The bundle as Go reads it: every root a certificate, all of them in the pool.
		inImage := strings.TrimPrefix(files["etc/ssl/certs/ca-certificates.crt"], "file 444 0:0 ")
		if certs := parseBundle(t, []byte(inImage)); len(certs) == 0 || len(certs) != roots {
			t.Errorf("%s: the image's CA bundle holds %d certificates, want the %d roots of %s", d.Platform, len(certs), roots, caBundleModule)
		}
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(inImage)) {
			t.Errorf("%s: crypto/x509 reads no certificate from the image's CA bundle", d.Platform)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}

	t.Run("layout names the image", func(t *testing.T) {
		top, err := layout.ImageIndexFromPath(built.layout)
		if err != nil {
			t.Fatal(err)
		}
		m, err := top.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{annotationRefName: "v1.2.3", annotationContainerName: "registry.example.com/team/switchboard:v1.2.3"}
		if diff := cmp.Diff(want, m.Manifests[0].Annotations); diff != "" {
			t.Errorf("index.json annotations (-want +got):\n%s", diff)
		}
	})

	t.Run("tarball is an OCI layout", func(t *testing.T) {
		// What ctr images import (and kind load image-archive, which runs it, and docker load
		// with the containerd image store) reads: oci-layout and index.json, every blob.
		dir := t.TempDir()
		untar(t, built.tar, dir)
		idx, got, err := readLayout(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != digest {
			t.Errorf("the tarball's index %s, the layout's %s", got, digest)
		}
		if err := validate.Index(idx); err != nil {
			t.Errorf("the tarball's image index is not valid: %v", err)
		}
		top, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		m, err := top.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Manifests[0].Annotations[annotationContainerName]; got != "registry.example.com/team/switchboard:v1.2.3" {
			t.Errorf("the tarball names the image %q for containerd", got)
		}
	})

	t.Run("tarball is a docker save archive", func(t *testing.T) {
		// What docker load reads with its own image store: manifest.json, naming the image, its
		// configuration and its layers.
		tag, err := name.NewTag(testName)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(built.tar, &tag)
		if err != nil {
			t.Fatalf("reading the tarball as docker load does: %v", err)
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("the docker image is not valid: %v", err)
		}
		want, err := imageFor(idx, v1.Platform{OS: "linux", Architecture: "amd64"})
		if err != nil {
			t.Fatal(err)
		}
		for _, get := range []func(v1.Image) (any, error){
			func(i v1.Image) (any, error) { return i.ConfigName() },
			func(i v1.Image) (any, error) { m, err := i.Manifest(); return m.Layers[0].Digest, err },
		} {
			g, err := get(img)
			if err != nil {
				t.Fatal(err)
			}
			w, err := get(want)
			if err != nil {
				t.Fatal(err)
			}
			if g != w {
				t.Errorf("docker load's image has %v, the linux/amd64 image %v", g, w)
			}
		}
	})

	t.Run("extract", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "manager")
		if code, _, stderr := runRelease(t, nil, "extract", "--layout="+built.layout, "--platform=linux/arm64", "--out="+out); code != 0 {
			t.Fatalf("release extract: exit %d\n%s", code, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, built.binaries["linux/arm64"]) {
			t.Error("release extract --platform=linux/arm64 did not write the arm64 binary")
		}
		bundleOut := filepath.Join(t.TempDir(), "ca-certificates.crt")
		if code, _, stderr := runRelease(t, nil, "extract", "--layout="+built.layout, "--platform=linux/amd64", "--file=/"+caBundlePath, "--out="+bundleOut); code != 0 {
			t.Fatalf("release extract --file=/%s: exit %d\n%s", caBundlePath, code, stderr)
		}
		for _, f := range []struct {
			path string
			mode os.FileMode
		}{{out, 0o555}, {bundleOut, 0o444}} {
			info, err := os.Stat(f.path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != f.mode {
				t.Errorf("%s: mode %v, want the image's %v", f.path, info.Mode().Perm(), f.mode)
			}
		}
		if code, _, stderr := runRelease(t, nil, "extract", "--layout="+built.layout, "--platform=linux/s390x", "--out="+out); code != 1 || !strings.Contains(stderr, "no image for linux/s390x") {
			t.Errorf("extracting for a platform the index lacks: exit %d\n%s", code, stderr)
		}
	})

	t.Run("digest", func(t *testing.T) {
		code, stdout, stderr := runRelease(t, nil, "digest", "--layout="+built.layout)
		if code != 0 || strings.TrimSpace(stdout) != digest.String() {
			t.Errorf("release digest: exit %d, %q; want %s\n%s", code, stdout, digest, stderr)
		}
	})
}

// TestImageIsReproducible builds the image twice from the same files and time: the same index
// digest and the same tarball, byte for byte. (TestMakeImageIsReproducible does it with `make
// image` in two clones.)
func TestImageIsReproducible(t *testing.T) {
	first := buildTestImage(t, t.TempDir())
	second := buildTestImage(t, t.TempDir())
	_, d1, err := readLayout(first.layout)
	if err != nil {
		t.Fatal(err)
	}
	_, d2, err := readLayout(second.layout)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Errorf("two builds of the same files: index %s and %s", d1, d2)
	}
	t1, err := os.ReadFile(first.tar)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := os.ReadFile(second.tar)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(t1, t2) {
		t.Error("two builds of the same files: different tarballs")
	}
}

func TestImageRefusesBadArguments(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "manager")
	if err := os.WriteFile(binary, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := []string{"image", "--layout=" + filepath.Join(dir, "image"), "--name=" + testName, "--version=v1", "--revision=abc",
		"--source=https://example.com", "--created=2026-05-06T07:08:09Z", "--binary=linux/amd64=" + binary}
	notALayout := filepath.Join(dir, "precious")
	if err := os.MkdirAll(notALayout, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notALayout, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		override []string
		code     int
		want     string
	}{
		{"no tag", []string{"--name=registry.example.com/switchboard"}, 2, `IMG="registry.example.com/switchboard" has neither a tag nor a digest`},
		{"a port is not a tag", []string{"--name=localhost:5000/switchboard"}, 2, "has neither a tag nor a digest"},
		{"not a time", []string{"--created=unknown"}, 2, `--created="unknown" is not an RFC 3339 time`},
		{"bad platform", []string{"--binary=amd64=" + binary}, 2, `platform "amd64" is not OS/ARCH`},
		{"missing binary", []string{"--binary=linux/arm64=" + filepath.Join(dir, "none")}, 1, "linux/arm64: open"},
		{"not a layout", []string{"--layout=" + notALayout}, 1, "neither empty nor an OCI layout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runRelease(t, nil, append(append([]string{}, good...), tc.override...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(notALayout, "file")); err != nil {
		t.Errorf("a directory that is not a layout was touched: %v", err)
	}
}

// filesystem returns the image's files as a container runtime would assemble them: "dir MODE
// UID:GID", or "file MODE UID:GID CONTENT".
func filesystem(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		owner := " " + strconv.Itoa(h.Uid) + ":" + strconv.Itoa(h.Gid)
		switch h.Typeflag {
		case tar.TypeDir:
			files[h.Name] = "dir " + strconv.FormatInt(h.Mode, 8) + owner
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = "file " + strconv.FormatInt(h.Mode, 8) + owner + " " + string(data)
		default:
			files[h.Name] = "type " + string(h.Typeflag)
		}
	}
}

// untar extracts a tar file into dir.
func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !sort.StringsAreSorted(names[1:]) || names[0] != "manifest.json" {
		t.Errorf("tar entries %v: want manifest.json, then the layout sorted", names)
	}
	var manifest tarball.Manifest
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || !cmp.Equal(manifest[0].RepoTags, []string{testName}) {
		t.Errorf("manifest.json %+v: want one image, named %s", manifest, testName)
	}
}
