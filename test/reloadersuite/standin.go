package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// errorLog is where a stand-in (of the Argo Rollouts controller, of the Secrets Store CSI
// driver) says what it could not do, once each time that changes: its loop meets the same
// error every round until the suite removes its cause.
type errorLog struct {
	w    io.Writer
	mu   sync.Mutex
	last string
}

// report logs err unless it is the one logged last, or ctx is done.
func (l *errorLog) report(ctx context.Context, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil || ctx.Err() != nil {
		return
	}
	if msg := err.Error(); msg != l.last {
		fmt.Fprintf(l.w, "%s %s\n", time.Now().UTC().Format(time.RFC3339), msg)
		l.last = msg
	}
}

// startStandIn runs sync every interval, and each of also once, until the returned function
// is called, which waits for the loop and closes the log at logPath. Errors go to the log.
func startStandIn(ctx context.Context, logPath string, interval time.Duration, sync func(context.Context) error, also ...func(context.Context, *errorLog)) (stop func(), err error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	log := &errorLog{w: logFile}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	for _, f := range also {
		go f(ctx, log)
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			log.report(ctx, sync(ctx))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
		_ = logFile.Close()
	}, nil
}
