package main

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPush pushes the image index to go-containerregistry's in-process registry on loopback,
// pulls it back, and finds the same digests: the index's and each platform's image's.
func TestPush(t *testing.T) {
	// No credentials of this machine's user: an empty Docker configuration.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	server := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer server.Close()
	host := strings.TrimPrefix(server.URL, "http://")

	built := buildTestImage(t, t.TempDir())
	local, digest, err := readLayout(built.layout)
	if err != nil {
		t.Fatal(err)
	}
	image := host + "/team/switchboard:v1.2.3"
	code, stdout, stderr := runRelease(t, nil, "push", "--layout="+built.layout, "--image="+image)
	if code != 0 {
		t.Fatalf("release push: exit %d\n%s", code, stderr)
	}
	if want := "Pushed " + image + "@" + digest.String(); strings.TrimSpace(stdout) != want {
		t.Errorf("release push printed %q, want %q", stdout, want)
	}

	ref, err := name.ParseReference(image)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("pulling %s back: %v", image, err)
	}
	got, err := pulled.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != digest {
		t.Errorf("pulled index %s, pushed %s", got, digest)
	}
	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		p, err := parsePlatform(platform)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(ref, remote.WithPlatform(p))
		if err != nil {
			t.Fatalf("pulling %s for %s: %v", image, platform, err)
		}
		want, err := imageFor(local, p)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := digestOf(t, img), digestOf(t, want); g != w {
			t.Errorf("%s: pulled image %s, pushed %s", platform, g, w)
		}
	}

	t.Run("by digest", func(t *testing.T) {
		byDigest := host + "/team/switchboard@" + digest.String()
		if code, _, stderr := runRelease(t, nil, "push", "--layout="+built.layout, "--image="+byDigest); code != 0 {
			t.Errorf("pushing to the index's own digest: exit %d\n%s", code, stderr)
		}
		other := host + "/team/switchboard@sha256:" + strings.Repeat("0", 64)
		if code, _, stderr := runRelease(t, nil, "push", "--layout="+built.layout, "--image="+other); code != 2 || !strings.Contains(stderr, "names a digest") {
			t.Errorf("pushing to another digest: exit %d\n%s", code, stderr)
		}
	})

	t.Run("without a tag", func(t *testing.T) {
		code, _, stderr := runRelease(t, nil, "push", "--layout="+built.layout, "--image="+host+"/team/switchboard")
		if code != 2 || !strings.Contains(stderr, "has neither a tag nor a digest") {
			t.Errorf("exit %d\n%s", code, stderr)
		}
	})
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
