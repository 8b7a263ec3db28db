// Package loggen writes synthetic manager logs, shaped like what the manager writes at debug
// level, for benchmarks and for tests that check the analyzer's figures against what was
// generated. The same seed gives the same bytes.
package loggen

import (
	"bufio"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Start is the time of the first generated line.
var Start = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// Controllers are the controllers the lines are about, with their kinds.
var Controllers = []struct{ Name, Group, Kind string }{
	{"myapp", "app.example.com", "MyApp"},
	{"verticalscaler", "app.example.com", "VerticalScaler"},
	{"configmapwatcher", "apps", "Deployment"},
}

// Truth is what was generated, for comparing with what the analyzer finds.
type Truth struct {
	Bytes, Lines, NotJSON uint64
	// Controllers are keyed by name.
	Controllers map[string]*ControllerTruth
}

// ControllerTruth counts one controller's reconciles.
type ControllerTruth struct {
	// Reconciles counts reconcile-end lines, Errors "Reconciler error" lines and Terminal those
	// of them that are terminal errors.
	Reconciles, Errors, Terminal uint64
	// MaxMs is the longest reconcile duration written.
	MaxMs float64
}

// errorTemplates are error texts with the kinds of variable parts real errors have; %n is the
// object's name, %q its quoted name, %d a number, %u a UUID.
var errorTemplates = []string{
	`updating status: Operation cannot be fulfilled on myapps.app.example.com %q: the object has been modified; please apply your changes to the latest version and try again`,
	`Service: applying Service %n: services %q is forbidden: exceeded quota: compute-resources, requested: services=1, used: services=%d, limited: services=%d`,
	`reading *v1.Deployment: Get "https://10.96.0.1:443/apis/apps/v1/namespaces/default/deployments/%n": context deadline exceeded`,
	`Deployment: applying Deployment %n: Internal error occurred: resource quota evaluation timed out after %ds, uid %u`,
	`terminal error: spec.deploymentName %q names no Deployment in namespace`,
}

// Write writes at least size bytes of whole log lines to w and returns what it wrote.
func Write(w io.Writer, size int64, seed uint64) (Truth, error) {
	g := &gen{
		rnd:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		out:   bufio.NewWriterSize(w, 1<<16),
		truth: Truth{Controllers: map[string]*ControllerTruth{}},
		now:   Start,
	}
	for _, c := range Controllers {
		g.truth.Controllers[c.Name] = &ControllerTruth{}
	}
	for int64(g.truth.Bytes) < size {
		g.reconcile()
		if err := g.err; err != nil {
			return g.truth, err
		}
	}
	return g.truth, g.out.Flush()
}

type gen struct {
	rnd   *rand.Rand
	out   *bufio.Writer
	truth Truth
	now   time.Time
	buf   []byte
	err   error
}

// reconcile writes the lines of one reconcile, now and then preceded by a line that is not
// about a reconcile.
func (g *gen) reconcile() {
	g.now = g.now.Add(time.Duration(g.rnd.IntN(5000)) * time.Microsecond)
	switch n := g.rnd.IntN(1000); {
	case n == 0:
		g.raw("I1130 05:02:44.123456       1 leaderelection.go:257] attempting to acquire leader lease kube-system/switchboard.app.example.com...")
		g.truth.NotJSON++
	case n < 5:
		g.line("info", "Starting workers", "", nil, `"worker count":1`)
	case n < 10:
		g.line("debug", "Dropped event", "", nil, `"source":"periodic","dropped":`+strconv.Itoa(g.rnd.IntN(100)))
	}
	c := Controllers[g.rnd.IntN(len(Controllers))]
	truth := g.truth.Controllers[c.Name]
	ns := "ns-" + strconv.Itoa(g.rnd.IntN(50))
	name := "app-" + strconv.Itoa(g.rnd.IntN(1000))
	id := g.uuid()
	obj := &object{c.Name, c.Group, c.Kind, ns, name, id}

	if g.rnd.IntN(20) == 0 {
		g.line("debug", "Updating status", "", obj, `"diff":"  v1alpha1.MyAppStatus{\n- \tPhase:         \"Pending\",\n+ \tPhase:         \"Running\",\n- \tReadyReplicas: 0,\n+ \tReadyReplicas: `+strconv.Itoa(g.rnd.IntN(5)+1)+`,\n  \t... // 2 identical fields\n  }\n"`)
	}
	if g.rnd.IntN(20) == 0 {
		g.line("info", "Updated Deployment", "", obj, `"fieldManager":"`+c.Name+`"`)
	}
	result := "success"
	if g.rnd.IntN(25) == 0 {
		tmpl := errorTemplates[g.rnd.IntN(len(errorTemplates))]
		text := g.errorText(tmpl, name)
		result = "error"
		truth.Errors++
		if tmpl[0] == 't' {
			result = "terminal-error"
			truth.Terminal++
		}
		g.line("error", "Reconciler error", text, obj, "")
	} else if g.rnd.IntN(10) == 0 {
		result = "requeue-after"
	}
	ms := math.Round(math.Exp(g.rnd.NormFloat64()+1)*1000) / 1000
	truth.Reconciles++
	truth.MaxMs = max(truth.MaxMs, ms)
	extra := `"durationMs":` + strconv.FormatFloat(ms, 'f', -1, 64) + `,"result":"` + result + `"`
	if result == "requeue-after" {
		extra += `,"requeueAfter":"1m0s"`
	}
	g.line("debug", "Reconcile finished", "", obj, extra)
}

type object struct{ controller, group, kind, namespace, name, reconcileID string }

// line writes one JSON line as controller-runtime's zap logger writes it; extra is raw JSON
// members.
func (g *gen) line(level, msg, errText string, o *object, extra string) {
	b := append(g.buf[:0], `{"level":"`...)
	b = append(b, level...)
	b = append(b, `","ts":"`...)
	b = g.now.AppendFormat(b, time.RFC3339)
	b = append(b, `","msg":`...)
	b = strconv.AppendQuote(b, msg)
	if o != nil {
		b = append(b, `,"controller":"`...)
		b = append(b, o.controller...)
		b = append(b, `","controllerGroup":"`...)
		b = append(b, o.group...)
		b = append(b, `","controllerKind":"`...)
		b = append(b, o.kind...)
		b = append(b, `","`...)
		b = append(b, o.kind...)
		b = append(b, `":{"name":"`...)
		b = append(b, o.name...)
		b = append(b, `","namespace":"`...)
		b = append(b, o.namespace...)
		b = append(b, `"},"namespace":"`...)
		b = append(b, o.namespace...)
		b = append(b, `","name":"`...)
		b = append(b, o.name...)
		b = append(b, `","reconcileID":"`...)
		b = append(b, o.reconcileID...)
		b = append(b, '"')
	}
	if extra != "" {
		b = append(b, ',')
		b = append(b, extra...)
	}
	if errText != "" {
		b = append(b, `,"error":`...)
		b = strconv.AppendQuote(b, errText) // the templates hold ASCII only: Go and JSON quoting agree.
	}
	b = append(b, "}\n"...)
	g.buf = b
	g.write(b)
}

func (g *gen) raw(s string) {
	g.buf = append(append(g.buf[:0], s...), '\n')
	g.write(g.buf)
}

func (g *gen) write(b []byte) {
	if g.err != nil {
		return
	}
	_, g.err = g.out.Write(b)
	g.truth.Bytes += uint64(len(b))
	g.truth.Lines++
}

// errorText fills in a template.
func (g *gen) errorText(tmpl, name string) string {
	var b []byte
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] != '%' || i+1 == len(tmpl) {
			b = append(b, tmpl[i])
			continue
		}
		i++
		switch tmpl[i] {
		case 'n':
			b = append(b, name...)
		case 'q':
			b = strconv.AppendQuote(b, name)
		case 'd':
			b = strconv.AppendInt(b, int64(g.rnd.IntN(1000)), 10)
		case 'u':
			b = append(b, g.uuid()...)
		}
	}
	return string(b)
}

func (g *gen) uuid() string {
	const hex = "0123456789abcdef"
	var b [36]byte
	for i := range b {
		switch i {
		case 8, 13, 18, 23:
			b[i] = '-'
		default:
			b[i] = hex[g.rnd.IntN(16)]
		}
	}
	return string(b[:])
}
