package testenv

import (
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// The reconcile-end line the manager logs at debug level after every reconcile
// (controllers/internal/reconcilelog, whose keys the README lists as stable).
const (
	reconcileEndMessage = "Reconcile finished"
	reconcileDurationMs = "durationMs"
)

// ReconcileRecord is one reconcile a manager ran: which controller, which object, and when it
// began and ended by this process's clock.
type ReconcileRecord struct {
	Controller      string
	Namespace, Name string
	Start, End      time.Time
}

// ReconcileRecorder records every reconcile of the managers that log through its Logger, from
// their reconcile-end lines, and passes every line on to another logger. A test that runs
// several managers as replicas gives each its own, to tell who reconciled what, and when.
type ReconcileRecorder struct {
	mu      sync.Mutex
	records []ReconcileRecord
	next    logr.Logger
}

// NewReconcileRecorder returns a recorder whose Logger passes every line on to next.
func NewReconcileRecorder(next logr.Logger) *ReconcileRecorder {
	return &ReconcileRecorder{next: next}
}

// Logger is the logger to give the manager (Replica.Logger). Its debug level is on, whatever
// next's: the reconcile-end line is a debug line.
func (r *ReconcileRecorder) Logger() logr.Logger {
	return logr.New(&recorderSink{recorder: r, next: r.next.GetSink()})
}

// Records returns what was recorded so far, in the order the reconciles ended.
func (r *ReconcileRecorder) Records() []ReconcileRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

func (r *ReconcileRecorder) add(rec ReconcileRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
}

// recorderSink is the logr sink behind ReconcileRecorder.Logger.
type recorderSink struct {
	recorder *ReconcileRecorder
	next     logr.LogSink
	values   []any
}

func (s *recorderSink) Init(info logr.RuntimeInfo) {
	if s.next != nil {
		s.next.Init(info)
	}
}

// Enabled is true at the reconcile-end line's level and below.
func (s *recorderSink) Enabled(level int) bool {
	return level <= 1 || (s.next != nil && s.next.Enabled(level))
}

func (s *recorderSink) Info(level int, msg string, kv ...any) {
	if msg == reconcileEndMessage {
		end := time.Now()
		values := append(slices.Clone(s.values), kv...)
		rec := ReconcileRecord{End: end, Start: end}
		for i := 0; i+1 < len(values); i += 2 {
			switch key, _ := values[i].(string); key {
			case "controller":
				rec.Controller, _ = values[i+1].(string)
			case "namespace":
				rec.Namespace, _ = values[i+1].(string)
			case "name":
				rec.Name, _ = values[i+1].(string)
			case reconcileDurationMs:
				if ms, ok := values[i+1].(float64); ok {
					rec.Start = end.Add(-time.Duration(ms * float64(time.Millisecond)))
				}
			}
		}
		s.recorder.add(rec)
	}
	if s.next != nil && s.next.Enabled(level) {
		s.next.Info(level, msg, kv...)
	}
}

func (s *recorderSink) Error(err error, msg string, kv ...any) {
	if s.next != nil {
		s.next.Error(err, msg, kv...)
	}
}

func (s *recorderSink) WithValues(kv ...any) logr.LogSink {
	out := &recorderSink{recorder: s.recorder, values: append(slices.Clone(s.values), kv...)}
	if s.next != nil {
		out.next = s.next.WithValues(kv...)
	}
	return out
}

func (s *recorderSink) WithName(name string) logr.LogSink {
	out := &recorderSink{recorder: s.recorder, values: s.values}
	if s.next != nil {
		out.next = s.next.WithName(name)
	}
	return out
}
