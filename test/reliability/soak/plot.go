package soak

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// panel is one plot of the picture: a title, a unit, and the lines drawn in it.
type panel struct {
	title, unit string
	lines       []series
}

type series struct {
	name  string
	value func(Sample) float64
	color color.Color
}

var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
)

// panels are the picture's plots, top to bottom.
var panels = []panel{
	{"Memory", "MiB", []series{
		{"RSS", func(s Sample) float64 { return s.RSS / mib }, blue},
		{"Go heap in use", func(s Sample) float64 { return s.Heap / mib }, orange},
	}},
	{"Goroutines", "", []series{{"goroutines", func(s Sample) float64 { return s.Goroutines }, blue}}},
	{"Open watches", "", []series{{"watches", func(s Sample) float64 { return s.OpenWatches }, blue}}},
	{"Work queue depth, all controllers", "requests", []series{{"depth", func(s Sample) float64 { return s.QueueDepth }, blue}}},
	{"API requests", "per second", []series{{"requests/s", func(s Sample) float64 { return s.RequestsPerSecond }, blue}}},
}

// WritePNG draws the samples as stacked plots against minutes, with a vertical line at the end
// of the warm-up, and writes a PNG of width × height to w.
func WritePNG(w io.Writer, samples []Sample, title string, warmupMinutes float64, width, height vg.Length) error {
	rows := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		if i == 0 {
			p.Title.Text = title + "\n" + pn.title
		}
		p.Y.Label.Text = pn.unit
		p.Y.Min = 0
		if i == len(panels)-1 {
			p.X.Label.Text = "minutes"
		}
		p.Add(plotter.NewGrid())
		top := 0.0
		for _, s := range pn.lines {
			xys := make(plotter.XYs, len(samples))
			for j, x := range samples {
				xys[j] = plotter.XY{X: x.At.Minutes(), Y: s.value(x)}
				top = max(top, xys[j].Y)
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("%s: %w", pn.title, err)
			}
			line.Color = s.color
			p.Add(line)
			if len(pn.lines) > 1 {
				p.Legend.Add(s.name, line)
			}
		}
		// Headroom above the lines for the legend.
		p.Y.Max = max(top, 1) * 1.35
		p.Legend.Top = true
		if warmupMinutes > 0 && len(samples) > 0 {
			marker, err := plotter.NewLine(plotter.XYs{{X: warmupMinutes, Y: 0}, {X: warmupMinutes, Y: max(top, 1) * 1.05}})
			if err != nil {
				return err
			}
			marker.Color = color.Gray{Y: 128}
			marker.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
			p.Add(marker)
		}
		rows[i] = []*plot.Plot{p}
	}
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		rows[i][0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}
