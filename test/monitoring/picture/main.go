// Command picture draws the Grafana dashboard (config/grafana/switchboard.json) from a capture of
// real scrapes (hack/dashboard writes one), without Grafana: it stores the scrapes in a Prometheus
// TSDB as Prometheus's scrape loop would (monitoring.LoadCapture), asks Prometheus's query engine
// each panel's queries over the capture, as Grafana would ask (its variables and
// $__rate_interval filled in, one point per step), and plots the answers with gonum/plot, each
// panel where the dashboard's grid puts it. Time series are lines with their legends; the state
// timeline of leaders is a band per controller and replica, filled while the replica leads.
//
//	go run ./picture -capture ../../bin/dashboard/scrapes.txt -out ../../docs/operations/dashboard.png
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/example/switchboard/test/monitoring"
)

func main() {
	root := flag.String("root", filepath.Join("..", ".."), "the repository's root")
	capture := flag.String("capture", filepath.Join("..", "..", "bin", "dashboard", "scrapes.txt"), "file of scrapes written by hack/dashboard")
	out := flag.String("out", filepath.Join("..", "..", "docs", "operations", "dashboard.png"), "PNG to write")
	width := flag.Float64("width", defaultWidth, "width of the picture, in points (a point is 4/3 of a pixel at 96 DPI)")
	points := flag.Int("points", defaultPoints, "about how many points each series has: the query step is the capture's length over this")
	families := flag.Bool("families", false, "print the metric families the dashboard reads, comma-separated (for hack/dashboard -families), and exit")
	flag.Parse()
	if *families {
		list, err := dashboardFamilies(*root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "picture:", err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(list, ","))
		return
	}
	empty, err := run(*root, *capture, *out, vg.Length(*width), *points)
	if err != nil {
		fmt.Fprintln(os.Stderr, "picture:", err)
		os.Exit(1)
	}
	if len(empty) > 0 {
		fmt.Fprintf(os.Stderr, "picture: no data in the capture for the panels %s\n", strings.Join(empty, ", "))
	}
}

// Defaults of the flags, which the picture in the docs is drawn with.
const (
	defaultWidth  = 1500
	defaultPoints = 150
)

// run draws the picture into out, and returns the titles of the panels without data.
func run(root, capturePath, out string, width vg.Length, points int) (empty []string, err error) {
	// Grafana's sans-serif, not gonum's default serif.
	plot.DefaultFont.Variant = "Sans"
	d, err := monitoring.LoadDashboard(filepath.Join(root, monitoring.DashboardFile))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "picture-tsdb")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	c, err := monitoring.LoadCapture(capturePath, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, c.DB.Close()) }()
	q := query{capture: c, engine: monitoring.NewEngine()}
	scrape := c.Interval.Round(time.Second)
	q.step = max(scrape, (c.End.Sub(c.Start) / time.Duration(points)).Round(time.Second))
	q.rateInterval = monitoring.RateInterval(q.step, scrape)
	// Grafana's "All" for the controller variable is its allValue; the job is the
	// ServiceMonitor's.
	q.values = map[string]string{"job": monitoring.TargetJob, "controller": ".*"}

	layout := newLayout(d, width)
	img := vgimg.NewWith(vgimg.UseWH(layout.width, layout.height), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	canvas := draw.New(img)
	drawHeader(canvas, layout, d, c, q)
	for _, p := range d.Panels {
		area := layout.panel(canvas, p.GridPos)
		switch p.Type {
		case "row":
			drawRow(area, p.Title)
		case "timeseries", "state-timeline":
			series, err := q.panel(p)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %w", p.Title, err)
			}
			if !drawPanel(area, p, series, q, c) {
				empty = append(empty, p.Title)
			}
		default:
			return nil, fmt.Errorf("panel %q: cannot draw a %s panel", p.Title, p.Type)
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	_, err = (vgimg.PngCanvas{Canvas: img}).WriteTo(f)
	return empty, errors.Join(err, f.Close())
}

// dashboardFamilies returns the metric families the dashboard's queries select, a histogram's
// _bucket series by the histogram's name, sorted.
func dashboardFamilies(root string) ([]string, error) {
	d, err := monitoring.LoadDashboard(filepath.Join(root, monitoring.DashboardFile))
	if err != nil {
		return nil, err
	}
	p := parser.NewParser(parser.Options{})
	var out []string
	for _, panel := range d.Panels {
		for _, target := range panel.Targets {
			text, err := monitoring.Expand(target.Expr, time.Minute, map[string]string{"job": monitoring.TargetJob, "controller": ".*"})
			if err != nil {
				return nil, err
			}
			expr, err := p.ParseExpr(text)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %w", panel.Title, err)
			}
			for _, name := range monitoring.SelectedMetrics(expr) {
				name = strings.TrimSuffix(name, "_bucket")
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// query asks Prometheus's engine a panel's queries over the capture, as Grafana would.
type query struct {
	capture      *monitoring.Capture
	engine       *promql.Engine
	step         time.Duration
	rateInterval time.Duration
	values       map[string]string
}

// series is one line of a panel: its legend and its points (unix seconds, value).
type series struct {
	legend string
	points []promql.FPoint
}

// panel returns the series of every query of p, sorted by legend within each query.
func (q query) panel(p monitoring.Panel) ([]series, error) {
	var out []series
	for _, target := range p.Targets {
		expr, err := monitoring.Expand(target.Expr, q.rateInterval, q.values)
		if err != nil {
			return nil, err
		}
		matrix, err := monitoring.QueryRange(context.Background(), q.engine, q.capture.DB, expr, q.capture.Start, q.capture.End, q.step)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", target.RefID, err)
		}
		var found []series
		for _, s := range matrix {
			found = append(found, series{legend: monitoring.Legend(target.LegendFormat, s.Metric), points: s.Floats})
		}
		slices.SortFunc(found, func(a, b series) int { return strings.Compare(a.legend, b.legend) })
		out = append(out, found...)
	}
	return out, nil
}

// layout places the dashboard's grid on the picture: GridColumns columns over the width, rows of
// rowHeight, under a header.
type layout struct {
	width, height vg.Length
	column        vg.Length
}

const (
	margin    = vg.Length(8)
	gap       = vg.Length(6)
	rowHeight = vg.Length(30)
	header    = vg.Length(46)
)

func newLayout(d *monitoring.Dashboard, width vg.Length) layout {
	rows := 0
	for _, p := range d.Panels {
		rows = max(rows, p.GridPos.Y+p.GridPos.H)
	}
	return layout{width: width, height: header + vg.Length(rows)*rowHeight + 2*margin,
		column: (width - 2*margin) / monitoring.GridColumns}
}

// panel returns the part of the canvas a grid position covers (vg's y axis points up).
func (l layout) panel(c draw.Canvas, g monitoring.GridPos) draw.Canvas {
	left := margin + vg.Length(g.X)*l.column
	top := l.height - header - margin - vg.Length(g.Y)*rowHeight
	return draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: left, Y: top - vg.Length(g.H)*rowHeight + gap},
		Max: vg.Point{X: left + vg.Length(g.W)*l.column - gap, Y: top},
	}}
}

var (
	ink       = color.RGBA{R: 0x20, G: 0x22, B: 0x26, A: 0xff}
	faint     = color.RGBA{R: 0x6e, G: 0x72, B: 0x7a, A: 0xff}
	border    = color.RGBA{R: 0xd8, G: 0xd9, B: 0xdc, A: 0xff}
	panelFill = color.RGBA{R: 0xfb, G: 0xfb, B: 0xfc, A: 0xff}
	standby   = color.RGBA{R: 0xe4, G: 0xe5, B: 0xe8, A: 0xff}
	// palette is Grafana's classic series palette.
	palette = []color.RGBA{
		{0x7e, 0xb2, 0x6d, 0xff}, {0xea, 0xb8, 0x39, 0xff}, {0x6e, 0xd0, 0xe0, 0xff}, {0xef, 0x84, 0x3c, 0xff},
		{0xe2, 0x4d, 0x42, 0xff}, {0x1f, 0x78, 0xc1, 0xff}, {0xba, 0x43, 0xa9, 0xff}, {0x70, 0x5d, 0xa0, 0xff},
		{0x50, 0x86, 0x42, 0xff}, {0xcc, 0xa3, 0x00, 0xff}, {0x44, 0x7e, 0xbc, 0xff}, {0xc1, 0x5c, 0x17, 0xff},
		{0x89, 0x0f, 0x02, 0xff}, {0x0a, 0x43, 0x7c, 0xff}, {0x6d, 0x1f, 0x62, 0xff}, {0x58, 0x44, 0x77, 0xff},
	}
)

func textStyle(size vg.Length, clr color.Color, bold bool) draw.TextStyle {
	f := font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return draw.TextStyle{Color: clr, Font: f, Handler: plot.DefaultTextHandler}
}

// drawHeader writes the dashboard's title and what the picture shows.
func drawHeader(c draw.Canvas, l layout, d *monitoring.Dashboard, capture *monitoring.Capture, q query) {
	top := l.height - margin
	c.FillText(textStyle(16, ink, true), vg.Point{X: margin, Y: top - 16}, d.Title)
	note := fmt.Sprintf("%s to %s UTC on the local cluster, replicas %s scraped every %s; each panel is Prometheus's answer to its queries (step %s, $__rate_interval %s), job=%q, controller=All",
		capture.Start.UTC().Format("2006-01-02 15:04:05"), capture.End.UTC().Format("15:04:05"), strings.Join(capture.Replicas, " and "),
		capture.Interval.Round(time.Second), q.step, q.rateInterval, q.values["job"])
	c.FillText(textStyle(9, faint, false), vg.Point{X: margin, Y: top - 34}, note)
}

// drawRow writes a row's title across the grid, as Grafana shows a row.
func drawRow(c draw.Canvas, title string) {
	c.FillText(textStyle(12, ink, true), vg.Point{X: c.Min.X, Y: c.Min.Y + 4}, title)
}

// drawPanel draws a panel's frame, its title, its series and their legend, or "No data" as
// Grafana does (and returns false) when no series has a value.
func drawPanel(c draw.Canvas, p monitoring.Panel, all []series, q query, capture *monitoring.Capture) bool {
	frame := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(panelFill, frame)
	c.StrokeLines(draw.LineStyle{Color: border, Width: 0.8}, append(frame, frame[0]))
	title := textStyle(10, ink, true)
	c.FillText(title, vg.Point{X: c.Min.X + 6, Y: c.Max.Y - 14}, p.Title)
	inner := draw.Crop(c, 2, -4, 2, -20)
	var drawn []series
	for _, s := range all {
		if slices.ContainsFunc(s.points, func(f promql.FPoint) bool { return !math.IsNaN(f.F) }) {
			drawn = append(drawn, s)
		}
	}
	if len(drawn) == 0 {
		msg := textStyle(11, faint, false)
		msg.XAlign, msg.YAlign = draw.XCenter, draw.YCenter
		inner.FillText(msg, vg.Point{X: (inner.Min.X + inner.Max.X) / 2, Y: (inner.Min.Y + inner.Max.Y) / 2}, "No data")
		return false
	}
	var plotArea draw.Canvas
	if p.Type == "state-timeline" {
		plotArea = inner
	} else {
		plotArea = drawLegend(inner, drawn)
	}
	pl := plot.New()
	pl.BackgroundColor = color.Transparent
	pl.X.Min, pl.X.Max = float64(capture.Start.Unix()), float64(capture.End.Unix())
	pl.X.Tick.Marker = timeTicks{}
	for _, a := range []*plot.Axis{&pl.X, &pl.Y} {
		a.Tick.Label.Font.Size = 7
		a.Tick.Label.Color = faint
		a.Color, a.Tick.Color = border, border
	}
	if p.Type == "state-timeline" {
		addStates(pl, drawn, q.step)
	} else {
		pl.Y.Tick.Marker = unitTicks(p.FieldConfig.Defaults.Unit)
		pl.Add(plotter.NewGrid())
		for i, s := range drawn {
			addLines(pl, s, palette[i%len(palette)], q.step)
		}
		// The dashboard's min is 0; a panel of zeros gets Grafana's 0 to 1.
		pl.Y.Min = 0
		if pl.Y.Max <= 0 {
			pl.Y.Max = 1
		}
	}
	pl.Draw(plotArea)
	return true
}

// timeTicks marks the time axis every round number of minutes (or seconds, for a short
// capture), about six marks, labelled in UTC.
type timeTicks struct{}

// Ticks implements plot.Ticker.
func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	span := time.Duration((hi - lo) * float64(time.Second))
	every := time.Hour
	for _, d := range []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute} {
		if span/d <= 7 {
			every = d
			break
		}
	}
	format := "15:04"
	if every < time.Minute {
		format = "15:04:05"
	}
	var ticks []plot.Tick
	for t := time.Unix(int64(lo), 0).UTC().Truncate(every); !t.After(time.Unix(int64(hi), 0)); t = t.Add(every) {
		if v := float64(t.Unix()); v >= lo {
			ticks = append(ticks, plot.Tick{Value: v, Label: t.Format(format)})
		}
	}
	return ticks
}

// drawLegend writes the legend under the plot, as many entries to a line as fit, and returns the
// area left for the plot.
func drawLegend(c draw.Canvas, all []series) draw.Canvas {
	style := textStyle(7, ink, false)
	const swatch, spacing, lineHeight = vg.Length(10), vg.Length(10), vg.Length(10)
	var lines [][]int
	var x vg.Length
	for i, s := range all {
		w := swatch + 3 + style.Width(s.legend) + spacing
		if len(lines) == 0 || x+w > c.Max.X-c.Min.X {
			lines = append(lines, nil)
			x = 0
		}
		lines[len(lines)-1] = append(lines[len(lines)-1], i)
		x += w
	}
	// At most a third of the panel for the legend; what does not fit is said.
	maxLines := int((c.Max.Y - c.Min.Y) / 3 / lineHeight)
	if len(lines) > maxLines {
		hidden := 0
		for _, line := range lines[maxLines-1:] {
			hidden += len(line)
		}
		lines = append(lines[:maxLines-1], nil)
		defer func(y vg.Length) {
			c.FillText(textStyle(7, faint, false), vg.Point{X: c.Min.X + 4, Y: y}, fmt.Sprintf("and %d more", hidden))
		}(c.Min.Y + 2)
	}
	for n, line := range lines {
		y := c.Min.Y + 2 + vg.Length(len(lines)-1-n)*lineHeight
		x := c.Min.X + 4
		for _, i := range line {
			clr := palette[i%len(palette)]
			c.FillPolygon(clr, []vg.Point{{X: x, Y: y + 2}, {X: x + swatch, Y: y + 2}, {X: x + swatch, Y: y + 5}, {X: x, Y: y + 5}})
			c.FillText(style, vg.Point{X: x + swatch + 3, Y: y}, all[i].legend)
			x += swatch + 3 + style.Width(all[i].legend) + spacing
		}
	}
	return draw.Crop(c, 0, 0, vg.Length(len(lines))*lineHeight+4, 0)
}

// addLines adds a series as lines, broken where it has no value (a gap longer than a step, or
// NaN).
func addLines(pl *plot.Plot, s series, clr color.Color, step time.Duration) {
	var run plotter.XYs
	flush := func() {
		if len(run) == 0 {
			return
		}
		if len(run) == 1 {
			if dots, err := plotter.NewScatter(run); err == nil {
				dots.Color, dots.Radius = clr, 1
				pl.Add(dots)
			}
		} else if line, err := plotter.NewLine(run); err == nil {
			line.Color, line.Width = clr, 1.2
			pl.Add(line)
		}
		run = nil
	}
	for i, f := range s.points {
		if math.IsNaN(f.F) || (i > 0 && f.T-s.points[i-1].T > step.Milliseconds()) {
			flush()
		}
		if !math.IsNaN(f.F) {
			run = append(run, plotter.XY{X: float64(f.T) / 1000, Y: f.F})
		}
	}
	flush()
}

// states is a state timeline: a band per series, filled with the series' colour where its value
// is 1 (leading) and grey where it is 0 (standby), empty where it has none (the replica is down).
type states struct {
	rows []series
	step time.Duration
}

func addStates(pl *plot.Plot, rows []series, step time.Duration) {
	s := states{rows: rows, step: step}
	pl.Add(s)
	pl.Y.Min, pl.Y.Max = 0, float64(len(rows))
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.legend
	}
	pl.Y.Tick.Marker = plot.TickerFunc(func(float64, float64) []plot.Tick {
		var ticks []plot.Tick
		for i, name := range names {
			ticks = append(ticks, plot.Tick{Value: float64(len(names)-1-i) + 0.5, Label: name})
		}
		return ticks
	})
	pl.Y.Tick.Length = 0
}

// Plot draws the bands.
func (s states) Plot(c draw.Canvas, pl *plot.Plot) {
	tx, ty := pl.Transforms(&c)
	for i, r := range s.rows {
		bottom, top := ty(float64(len(s.rows)-1-i)+0.15), ty(float64(len(s.rows)-1-i)+0.85)
		for j, f := range r.points {
			if math.IsNaN(f.F) {
				continue
			}
			end := f.T + s.step.Milliseconds()
			if j+1 < len(r.points) && r.points[j+1].T < end {
				end = r.points[j+1].T
			}
			clr := color.Color(standby)
			if f.F >= 1 {
				clr = palette[i%len(palette)]
			}
			left, right := tx(float64(f.T)/1000), tx(float64(end)/1000)
			c.FillPolygon(clr, []vg.Point{{X: left, Y: bottom}, {X: right, Y: bottom}, {X: right, Y: top}, {X: left, Y: top}})
		}
	}
}

// DataRange is the capture's time by the rows.
func (s states) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, r := range s.rows {
		for _, f := range r.points {
			xmin, xmax = math.Min(xmin, float64(f.T)/1000), math.Max(xmax, float64(f.T)/1000)
		}
	}
	return xmin, xmax, 0, float64(len(s.rows))
}

// unitTicks labels the y axis in the panel's unit, as Grafana does.
func unitTicks(unit string) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(lo, hi)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = formatUnit(ticks[i].Value, unit)
			}
		}
		return ticks
	})
}

// formatUnit writes v in Grafana's unit.
func formatUnit(v float64, unit string) string {
	switch unit {
	case "s":
		switch {
		case v == 0:
			return "0"
		case v < 1e-3:
			return fmt.Sprintf("%gµs", round(v*1e6))
		case v < 1:
			return fmt.Sprintf("%gms", round(v*1e3))
		}
		return fmt.Sprintf("%gs", round(v))
	case "percentunit":
		return fmt.Sprintf("%g%%", round(v*100))
	case "bytes":
		for _, u := range []struct {
			name string
			size float64
		}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
			if v >= u.size {
				return fmt.Sprintf("%g %s", round(v/u.size), u.name)
			}
		}
		return fmt.Sprintf("%g B", round(v))
	case "ops":
		return short(v) + " ops/s"
	case "reqps":
		return short(v) + " req/s"
	}
	return short(v)
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", round(v/1e6))
	case v >= 1e3:
		return fmt.Sprintf("%gk", round(v/1e3))
	}
	return fmt.Sprintf("%g", round(v))
}

// round keeps three significant digits.
func round(v float64) float64 {
	if v == 0 {
		return 0
	}
	scale := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}
