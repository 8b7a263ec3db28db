package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BenchmarkImage runs a warm `make image` (the Go build cache filled by a first run, as on a
// developer's machine or a CI runner that keeps its cache) in a clone of HEAD, and reports:
//
//   - s/make-image: the seconds one `make image` takes: the manager built for linux/amd64 and
//     linux/arm64, packed, compressed, written as a layout and a tarball;
//   - x-make-build: that time over a warm `make build`'s (one platform, no packing), measured in
//     the same run, on the same noisy machine;
//   - x-binary: the compressed image a node pulls for linux/amd64 (manifest, configuration,
//     layer) over the stripped binary it holds; and both sizes in MiB.
func BenchmarkImage(b *testing.B) {
	dir := cloneHead(b)
	runIn(b, dir, "make", "image") // fills the Go build cache for this clone's paths
	runIn(b, dir, "make", "build")
	var imageTime, buildTime time.Duration
	for b.Loop() {
		start := time.Now()
		runIn(b, dir, "make", "image")
		imageTime += time.Since(start)
		b.StopTimer()
		start = time.Now()
		runIn(b, dir, "make", "build")
		buildTime += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(imageTime.Seconds()/float64(b.N), "s/make-image")
	b.ReportMetric(float64(imageTime)/float64(buildTime), "x-make-build")

	idx, _, err := readLayout(filepath.Join(dir, "dist", "image"))
	if err != nil {
		b.Fatal(err)
	}
	img, err := imageFor(idx, v1.Platform{OS: "linux", Architecture: "amd64"})
	if err != nil {
		b.Fatal(err)
	}
	compressed := pulledSize(b, img)
	binary, err := os.Stat(filepath.Join(dir, "dist", "bin", "linux", "amd64", "manager"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(compressed)/(1<<20), "image-MiB")
	b.ReportMetric(float64(binary.Size())/(1<<20), "binary-MiB")
	b.ReportMetric(float64(compressed)/float64(binary.Size()), "x-binary")
}

// pulledSize is what a node downloads for an image: its manifest, configuration and compressed
// layers.
func pulledSize(b *testing.B, img v1.Image) int64 {
	b.Helper()
	m, err := img.Manifest()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		b.Fatal(err)
	}
	size := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size
}
