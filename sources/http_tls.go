package sources

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// tlsConfig serves the certificate in CertDir, or a self-signed one. HTTP/1.1 only: the
// trigger has no use for HTTP/2 and so is not exposed to its rapid-reset class of attacks.
func (h HTTPTriggerServer) tlsConfig(ctx context.Context) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	certPath, keyPath := filepath.Join(h.CertDir, "tls.crt"), filepath.Join(h.CertDir, "tls.key")
	if h.CertDir != "" && fileExists(certPath) && fileExists(keyPath) {
		watcher, err := certwatcher.New(certPath, keyPath)
		if err != nil {
			return nil, fmt.Errorf("HTTP trigger certificate: %w", err)
		}
		go func() {
			if err := watcher.Start(ctx); err != nil {
				logf.FromContext(ctx).Error(err, "Watching the HTTP trigger certificate failed")
			}
		}()
		cfg.GetCertificate = watcher.GetCertificate
		return cfg, nil
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		return nil, fmt.Errorf("generating the HTTP trigger's self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("loading the HTTP trigger's self-signed certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
