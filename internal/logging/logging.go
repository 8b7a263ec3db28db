// Package logging builds the manager's logger: controller-runtime's zap logger, configured by
// the --zap-* flags, with one change. controller-runtime's production configuration samples
// (per message and level, the first 100 lines of each second, then one in 100), so in a burst
// most "Rolled Deployment" lines were dropped, and `manager logs summary` undercounted exactly
// when it mattered. This package samples the same way, except that:
//   - a line that records a write (its message starts with one of WriteVerbs, the style of
//     "Created Deployment", "Rolled StatefulSet") is never dropped;
//   - every line it drops is counted, per controller (the logger's "controller" value), in
//     the Prometheus counter switchboard_log_lines_dropped_total, and Reporter logs the counts
//     every ReportInterval as a DroppedMessage line that `manager logs summary` adds up.
package logging

import (
	"context"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/prometheus/client_golang/prometheus"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The sampling policy, controller-runtime's: per message and level, the first samplingFirst
// lines of each samplingTick, then one in samplingThereafter.
const (
	samplingTick       = time.Second
	samplingFirst      = 100
	samplingThereafter = 100
)

// WriteVerbs start the messages of lines that record a write, which are never sampled: the
// controllers log a write as "<Verb> <Kind>..." ("Applied recommendation to Deployment").
var WriteVerbs = []string{"Applied", "Created", "Deleted", "Patched", "Recorded", "Removed", "Rolled", "Updated"}

// DroppedMessage is the message of Reporter's lines, with the keys "controller" and "dropped"
// (the lines dropped since the previous such line of that controller).
const DroppedMessage = "Log lines dropped by sampling"

// ReportInterval is how often Reporter logs the lines dropped meanwhile.
const ReportInterval = 10 * time.Second

// noController is the "controller" label of lines logged outside any controller.
const noController = ""

// RecordsWrite says whether a message records a write, and is therefore never sampled.
func RecordsWrite(msg string) bool {
	verb, _, _ := strings.Cut(msg, " ")
	return slices.Contains(WriteVerbs, verb) || msg == DroppedMessage
}

// Sampling is the state of the sampler: its counters and what it dropped.
type Sampling struct {
	// counts holds a level's counters from its first sampled line: at the default level only
	// Info and Error lines come, and each level's 64 KiB would otherwise be heap for good.
	counts  [numLevels]atomic.Pointer[[countersPerLevel]counter]
	dropped *prometheus.CounterVec

	mu sync.Mutex
	// pending are the drops per controller since Reporter last logged them.
	pending map[string]*atomic.Uint64
}

// New returns a logger configured by opts (the --zap-* flags) as controller-runtime's zap.New
// would configure it, but sampled by a Sampling whose counter is registered with registerer.
// As controller-runtime does, it samples neither in development mode nor when V(2) or more
// verbose lines are enabled.
func New(opts *zap.Options, registerer prometheus.Registerer) (logr.Logger, *Sampling, error) {
	s := &Sampling{
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_log_lines_dropped_total",
			Help: "Log lines the sampler dropped (never lines that record a write), by controller; \"\" outside controllers.",
		}, []string{"controller"}),
		pending: map[string]*atomic.Uint64{},
	}
	if err := registerer.Register(s.dropped); err != nil {
		return logr.Logger{}, nil, err
	}
	// Served at zero from the start (the lines outside controllers), so that an alert on
	// drops reads 0, not "no data"; each controller's series starts at its first drop.
	s.dropped.WithLabelValues("")
	o := *opts
	level := zapcore.LevelEnabler(uberzap.NewAtomicLevelAt(zapcore.InfoLevel))
	if o.Development {
		level = uberzap.NewAtomicLevelAt(zapcore.DebugLevel)
	}
	if o.Level != nil {
		level = o.Level
	}
	sampled := !o.Development && !level.Enabled(zapcore.Level(-2))
	// controller-runtime adds its sampler unless V(2) is enabled: tell it so while it builds
	// the logger (its only look at the level for that), then use the real level.
	building := &switchLevel{real: level}
	building.building.Store(true)
	o.Level = building
	if sampled {
		o.ZapOpts = append(slices.Clone(o.ZapOpts), uberzap.WrapCore(func(c zapcore.Core) zapcore.Core { return &core{Core: c, s: s} }))
	}
	logger := zap.NewRaw(zap.UseFlagOptions(&o))
	building.building.Store(false)
	return zapr.NewLogger(logger), s, nil
}

// switchLevel is a level that says V(2) is enabled while controller-runtime builds the logger,
// and then is the real level.
type switchLevel struct {
	real     zapcore.LevelEnabler
	building atomic.Bool
}

// Enabled is the real level's, but while building.
func (l *switchLevel) Enabled(level zapcore.Level) bool {
	if l.building.Load() && level == zapcore.Level(-2) {
		return true
	}
	return l.real.Enabled(level)
}

// core samples the lines of the core it wraps, but never a line that records a write, and
// counts what it drops per controller.
type core struct {
	zapcore.Core
	s          *Sampling
	controller string
}

// With adds fields, and notes the controller the logger is for.
func (c *core) With(fields []zapcore.Field) zapcore.Core {
	controller := c.controller
	for _, f := range fields {
		if f.Key == "controller" && f.Type == zapcore.StringType {
			controller = f.String
		}
	}
	return &core{Core: c.Core.With(fields), s: c.s, controller: controller}
}

// Check lets the line through unless sampling drops it.
func (c *core) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.Enabled(ent.Level) {
		return ce
	}
	if RecordsWrite(ent.Message) || c.s.allow(ent) {
		return c.Core.Check(ent, ce)
	}
	c.s.drop(c.controller)
	return ce
}

// drop counts a dropped line of controller.
func (s *Sampling) drop(controller string) {
	s.dropped.WithLabelValues(controller).Inc()
	s.mu.Lock()
	n, ok := s.pending[controller]
	if !ok {
		n = &atomic.Uint64{}
		s.pending[controller] = n
	}
	s.mu.Unlock()
	n.Add(1)
}

// Reporter returns a runnable for the manager (mgr.Add) that logs to log, every
// ReportInterval and when it stops, one DroppedMessage line per controller whose lines were
// dropped meanwhile. It runs on every replica, leader or not: each samples its own log.
func (s *Sampling) Reporter(log logr.Logger) *Reporter {
	return &Reporter{s: s, log: log}
}

// Reporter logs the sampler's drops; see Sampling.Reporter.
type Reporter struct {
	s   *Sampling
	log logr.Logger
}

// Start reports until ctx ends, and once more then.
func (r *Reporter) Start(ctx context.Context) error {
	ticker := time.NewTicker(ReportInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			r.s.Report(r.log)
			return nil
		case <-ticker.C:
			r.s.Report(r.log)
		}
	}
}

// NeedLeaderElection is false: every replica reports the lines it dropped.
func (r *Reporter) NeedLeaderElection() bool { return false }

// Report logs the lines dropped since the last report, one line per controller.
func (s *Sampling) Report(log logr.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for controller, n := range s.pending {
		if dropped := n.Swap(0); dropped > 0 {
			l := log
			if controller != noController {
				l = l.WithValues("controller", controller)
			}
			l.Info(DroppedMessage, "dropped", dropped)
		}
	}
}

// The sampler's counters, as zap's sampler keeps them: per level from debug up, 4096 counters
// picked by a hash of the message.
const (
	minLevel         = zapcore.DebugLevel
	numLevels        = zapcore.FatalLevel - minLevel + 1
	countersPerLevel = 4096
)

// counter counts the lines of one message and level in the current tick.
type counter struct {
	resetAt atomic.Int64
	count   atomic.Uint64
}

// add counts a line at t and returns its number in the tick.
func (c *counter) add(t time.Time) uint64 {
	now := t.UnixNano()
	resetAt := c.resetAt.Load()
	if resetAt > now {
		return c.count.Add(1)
	}
	c.count.Store(1)
	if !c.resetAt.CompareAndSwap(resetAt, now+samplingTick.Nanoseconds()) {
		return c.count.Add(1) // another line reset the tick first
	}
	return 1
}

// allow says whether the policy keeps this line.
func (s *Sampling) allow(ent zapcore.Entry) bool {
	if ent.Level < minLevel || ent.Level > zapcore.FatalLevel {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(ent.Message))
	n := s.countersOf(ent.Level)[h.Sum32()%countersPerLevel].add(ent.Time)
	return n <= samplingFirst || (n-samplingFirst)%samplingThereafter == 0
}

// countersOf returns the counters of level, making them at its first line.
func (s *Sampling) countersOf(level zapcore.Level) *[countersPerLevel]counter {
	slot := &s.counts[level-minLevel]
	if counters := slot.Load(); counters != nil {
		return counters
	}
	slot.CompareAndSwap(nil, new([countersPerLevel]counter))
	return slot.Load()
}
