package monitoring

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// The labels Prometheus gives every series of a scraped replica, as the Prometheus Operator
// does for config/prometheus's ServiceMonitor (jobLabel: app.kubernetes.io/name).
const (
	TargetJob       = "switchboard"
	TargetNamespace = "switchboard-system"
)

// Capture is what a file of scrapes (written by hack/dashboard) holds, once stored.
type Capture struct {
	// DB holds every sample, as Prometheus's scrape loop would have stored it.
	DB *tsdb.DB
	// Start and End are the times of the first and the last scrape; Interval the time between
	// two scrapes of a replica.
	Start, End time.Time
	Interval   time.Duration
	// Replicas are the scraped replicas' names: their series' pod label.
	Replicas []string
}

// scrapeHeader starts each scrape in the file: "# SCRAPE <replica> <unix ms>", with " down"
// when the scrape failed.
const scrapeHeader = "# SCRAPE "

// LoadCapture reads a file of scrapes (gzipped when its name ends in .gz) into a new TSDB in dir,
// as Prometheus's scrape loop stores a scrape: each page parsed by Prometheus's own text parser,
// its series given the target's labels (job, namespace, pod, instance; a scraped label of the
// same name kept as exported_<name>, as honor_labels: false does), up set to 1 or 0, and a
// staleness marker for each series that a scrape no longer has, or all of a replica's when its
// scrape fails.
func LoadCapture(path, dir string) (*Capture, error) {
	data, err := readMaybeGzipped(path)
	if err != nil {
		return nil, err
	}
	db, err := tsdb.Open(dir, slog.New(slog.DiscardHandler), nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		return nil, err
	}
	c := &Capture{DB: db}
	if err := c.load(data); err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", path, err), db.Close())
	}
	return c, nil
}

func readMaybeGzipped(path string) (_ []byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	return io.ReadAll(r)
}

// scrape is one scrape of the file.
type scrape struct {
	replica string
	at      int64
	down    bool
	page    []byte
}

// load stores the scrapes of data.
func (c *Capture) load(data []byte) error {
	scrapes, err := splitScrapes(data)
	if err != nil {
		return err
	}
	if len(scrapes) == 0 {
		return errors.New("no scrapes")
	}
	// last holds each replica's series of its last scrape, for the staleness markers.
	last := map[string]map[uint64]labels.Labels{}
	firstAt := map[string][]int64{}
	symbols := labels.NewSymbolTable()
	for _, s := range scrapes {
		app := c.DB.Appender(context.Background())
		seen := map[uint64]labels.Labels{}
		target := labels.FromStrings("instance", s.replica, "job", TargetJob, "namespace", TargetNamespace, "pod", s.replica)
		up := 1.0
		if s.down {
			up = 0
		} else if err := appendPage(app, s, target, symbols, seen); err != nil {
			_ = app.Rollback()
			return err
		}
		for hash, lset := range last[s.replica] {
			if _, ok := seen[hash]; !ok {
				if _, err := app.Append(0, lset, s.at, math.Float64frombits(value.StaleNaN)); err != nil {
					_ = app.Rollback()
					return err
				}
			}
		}
		if _, err := app.Append(0, withName(target, "up"), s.at, up); err != nil {
			_ = app.Rollback()
			return err
		}
		if err := app.Commit(); err != nil {
			return err
		}
		last[s.replica] = seen
		if !slices.Contains(c.Replicas, s.replica) {
			c.Replicas = append(c.Replicas, s.replica)
		}
		firstAt[s.replica] = append(firstAt[s.replica], s.at)
	}
	c.Start, c.End = time.UnixMilli(scrapes[0].at), time.UnixMilli(scrapes[len(scrapes)-1].at)
	c.Interval = medianInterval(firstAt)
	slices.Sort(c.Replicas)
	return nil
}

// splitScrapes splits the file into its scrapes, in time order.
func splitScrapes(data []byte) ([]scrape, error) {
	var out []scrape
	var page bytes.Buffer
	flush := func() {
		if len(out) > 0 {
			out[len(out)-1].page = bytes.Clone(page.Bytes())
		}
		page.Reset()
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		header, ok := strings.CutPrefix(line, scrapeHeader)
		if !ok {
			page.WriteString(line)
			page.WriteByte('\n')
			continue
		}
		flush()
		fields := strings.Fields(header)
		if len(fields) < 2 || len(fields) > 3 || (len(fields) == 3 && fields[2] != "down") {
			return nil, fmt.Errorf("line %d: %q is not %s<replica> <unix ms> [down]", n, line, scrapeHeader)
		}
		at, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(out) > 0 && at < out[len(out)-1].at {
			return nil, fmt.Errorf("line %d: scrapes out of time order", n)
		}
		out = append(out, scrape{replica: fields[0], at: at, down: len(fields) == 3})
	}
	flush()
	return out, s.Err()
}

// appendPage appends the series of one scraped page, with the target's labels, at the scrape's
// time, and records them in seen.
func appendPage(app storage.Appender, s scrape, target labels.Labels, symbols *labels.SymbolTable, seen map[uint64]labels.Labels) error {
	p := textparse.NewPromParser(s.page, symbols, false)
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the scrape of %s at %d: %w", s.replica, s.at, err)
		}
		if entry != textparse.EntrySeries {
			continue
		}
		_, _, v := p.Series()
		var scraped labels.Labels
		p.Labels(&scraped)
		lset := withTarget(scraped, target)
		if _, err := app.Append(0, lset, s.at, v); err != nil {
			return fmt.Errorf("the scrape of %s at %d, %s: %w", s.replica, s.at, lset, err)
		}
		seen[lset.Hash()] = lset
	}
}

// withTarget adds the target's labels to a scraped series; a scraped label the target also has
// becomes exported_<name>.
func withTarget(scraped, target labels.Labels) labels.Labels {
	b := labels.NewBuilder(scraped)
	target.Range(func(l labels.Label) {
		if v := scraped.Get(l.Name); v != "" {
			b.Set("exported_"+l.Name, v)
		}
		b.Set(l.Name, l.Value)
	})
	return b.Labels()
}

func withName(target labels.Labels, name string) labels.Labels {
	return labels.NewBuilder(target).Set(model.MetricNameLabel, name).Labels()
}

// medianInterval returns the median time between two scrapes of one replica.
func medianInterval(times map[string][]int64) time.Duration {
	var gaps []int64
	for _, ts := range times {
		for i := 1; i < len(ts); i++ {
			gaps = append(gaps, ts[i]-ts[i-1])
		}
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return time.Duration(gaps[len(gaps)/2]) * time.Millisecond
}

// NewEngine returns Prometheus's query engine with a Prometheus server's defaults: a lookback of
// five minutes, and the parser of TestParserOptions.
func NewEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		MaxSamples:    50_000_000,
		Timeout:       2 * time.Minute,
		LookbackDelta: 5 * time.Minute,
	})
}

// RateInterval is Grafana's $__rate_interval for a query step and a scrape interval: the larger
// of step plus the scrape interval, and four scrape intervals.
func RateInterval(step, scrape time.Duration) time.Duration {
	return max(step+scrape, 4*scrape)
}

// QueryRange evaluates expr over [start, end] every step against q, as Grafana asks Prometheus.
// The answer is a copy: closing a query hands its points back to the engine's pool.
func QueryRange(ctx context.Context, engine *promql.Engine, q storage.Queryable, expr string, start, end time.Time, step time.Duration) (promql.Matrix, error) {
	query, err := engine.NewRangeQuery(ctx, q, nil, expr, start, end, step)
	if err != nil {
		return nil, err
	}
	defer query.Close()
	res := query.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	matrix, err := res.Matrix()
	if err != nil {
		return nil, err
	}
	out := make(promql.Matrix, len(matrix))
	for i, s := range matrix {
		out[i] = promql.Series{Metric: s.Metric.Copy(), Floats: slices.Clone(s.Floats)}
	}
	return out, nil
}

// Legend fills a legendFormat ("{{controller}} p99") with a series' labels, as Grafana does; an
// empty format names the series by its labels.
func Legend(format string, lset labels.Labels) string {
	if format == "" {
		return lset.String()
	}
	out := format
	lset.Range(func(l labels.Label) {
		out = strings.ReplaceAll(out, "{{"+l.Name+"}}", l.Value)
		out = strings.ReplaceAll(out, "{{ "+l.Name+" }}", l.Value)
	})
	return legendVariable.ReplaceAllString(out, "")
}
