package leases

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
)

// electorLogger is the logger client-go's elector gets: it logs every failed request as an
// error, including the one a shutdown cancels, which is no error; that one goes to debug.
func electorLogger(log logr.Logger) logr.Logger {
	if log.GetSink() == nil {
		return log
	}
	return logr.New(&cancelIsNoError{LogSink: log.GetSink()})
}

type cancelIsNoError struct{ logr.LogSink }

func (s *cancelIsNoError) Error(err error, msg string, kv ...any) {
	if errors.Is(err, context.Canceled) {
		if s.Enabled(1) {
			s.Info(1, msg, append(kv, "error", err.Error())...)
		}
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s *cancelIsNoError) WithValues(kv ...any) logr.LogSink {
	return &cancelIsNoError{LogSink: s.LogSink.WithValues(kv...)}
}

func (s *cancelIsNoError) WithName(name string) logr.LogSink {
	return &cancelIsNoError{LogSink: s.LogSink.WithName(name)}
}
