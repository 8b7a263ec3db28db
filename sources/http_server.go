package sources

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Run serves until ctx ends, then shuts the server down.
func (h HTTPTriggerServer) Run(ctx context.Context, p *Producer) error {
	ln, err := h.listen(ctx)
	if err != nil {
		return err
	}
	return h.serve(ctx, ln, p)
}

// listen opens the listener, wrapped in TLS when Secure.
func (h HTTPTriggerServer) listen(ctx context.Context) (net.Listener, error) {
	if len(h.Token) == 0 {
		return nil, errors.New("HTTP trigger: no token")
	}
	var tlsConfig *tls.Config
	if h.Secure {
		var err error
		if tlsConfig, err = h.tlsConfig(ctx); err != nil {
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", h.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("HTTP trigger: %w", err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	return ln, nil
}

// serve answers on ln until ctx ends.
func (h HTTPTriggerServer) serve(ctx context.Context, ln net.Listener, p *Producer) error {
	log := logf.FromContext(ctx).WithValues("source", string(p.Source()))
	srv := &http.Server{
		Handler:           h.Handler(p),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		// net/http writes what goes wrong with a connection (a failed TLS handshake, ...)
		// to the standard logger: send it through the manager's, so the logs stay JSON.
		ErrorLog: stdlog.New(serverErrors{log}, "", 0),
	}
	stopped := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopped <- srv.Shutdown(shutdownCtx)
	}()
	log.Info("Serving HTTP trigger", "address", ln.Addr().String(), "secure", h.Secure)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("HTTP trigger: %w", err)
	}
	return <-stopped
}

// serverErrors writes each line net/http logs as a debug line of the manager's logger: they
// are about callers (a client that gave up during the TLS handshake), not the manager.
type serverErrors struct{ log logr.Logger }

func (w serverErrors) Write(p []byte) (int, error) {
	w.log.V(1).Info("HTTP trigger connection error", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
