package main

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/vg"
)

// The picture in the docs and the capture it is drawn from.
var (
	picture = filepath.Join("..", "..", "..", "docs", "operations", "dashboard.png")
	capture = filepath.Join("..", "testdata", "scrapes.txt.gz")
)

// TestPictureIsCurrent draws the dashboard again from the committed capture, as `make
// dashboard-picture` does, and fails when a panel has no data in it or when the picture differs
// from the one in the docs: the picture is what the dashboard's queries answer over real scrapes.
func TestPictureIsCurrent(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dashboard.png")
	empty, err := run(filepath.Join("..", "..", ".."), capture, out, vg.Length(defaultWidth), defaultPoints)
	if err != nil {
		t.Fatal(err)
	}
	if len(empty) > 0 {
		t.Errorf("panels without data in %s: %v (`make dashboard-capture` records their metrics)", capture, empty)
	}
	got, want := decode(t, out), decode(t, picture)
	if got.Bounds() != want.Bounds() {
		t.Fatalf("the picture drawn is %v, %s is %v: run `make dashboard-picture`", got.Bounds(), picture, want.Bounds())
	}
	differ := 0
	for y := got.Bounds().Min.Y; y < got.Bounds().Max.Y; y++ {
		for x := got.Bounds().Min.X; x < got.Bounds().Max.X; x++ {
			if got.At(x, y) != want.At(x, y) {
				differ++
			}
		}
	}
	if differ > 0 {
		t.Errorf("%d pixels of %s differ from the picture drawn from %s and the dashboard: run `make dashboard-picture`", differ, picture, capture)
	}
}

func decode(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// TestFormatUnit: the y axes speak Grafana's units.
func TestFormatUnit(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.25, "s", "250ms"},
		{0.0004, "s", "400µs"},
		{2, "s", "2s"},
		{0.5, "percentunit", "50%"},
		{64 << 20, "bytes", "64 MiB"},
		{1.5, "ops", "1.5 ops/s"},
		{2500, "reqps", "2.5k req/s"},
		{0.0123, "short", "0.0123"},
	} {
		if got := formatUnit(tc.v, tc.unit); got != tc.want {
			t.Errorf("formatUnit(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}
