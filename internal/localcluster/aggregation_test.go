package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"
)

// TestMetricsPipelineCertificates checks the certificates as their users do: metrics-server
// verifies kwok at 127.0.0.1, kube-apiserver verifies metrics-server by its Service's name and
// metrics-server accepts kube-apiserver's front-proxy client by the allowed name; and neither
// authority vouches for the other's certificates.
func TestMetricsPipelineCertificates(t *testing.T) {
	dir := t.TempDir()
	p, err := newMetricsPipeline(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.kwokPort == 0 || p.metricsServerPort == 0 || p.kwokPort == p.metricsServerPort {
		t.Errorf("ports kwok %d, metrics-server %d: want two distinct free ports", p.kwokPort, p.metricsServerPort)
	}
	serving, frontProxy := pool(t, p.path(servingCAFile)), pool(t, p.path(frontProxyCAFile))

	verify := func(name, certFile, keyFile string, opts x509.VerifyOptions) {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(p.path(certFile), p.path(keyFile))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := pair.Leaf.Verify(opts); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	verify("kwok for metrics-server", kwokCertFile, kwokKeyFile, x509.VerifyOptions{Roots: serving, DNSName: "127.0.0.1"})
	verify("metrics-server for kube-apiserver", metricsServerCertFile, metricsServerKeyFile,
		x509.VerifyOptions{Roots: serving, DNSName: "metrics-server.kube-system.svc"})
	verify("front proxy for metrics-server", frontProxyCertFile, frontProxyKeyFile,
		x509.VerifyOptions{Roots: frontProxy, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})

	proxy, err := tls.LoadX509KeyPair(p.path(frontProxyCertFile), p.path(frontProxyKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if proxy.Leaf.Subject.CommonName != frontProxyClient {
		t.Errorf("front-proxy client certificate for %q, want %q (--requestheader-allowed-names)", proxy.Leaf.Subject.CommonName, frontProxyClient)
	}
	if _, err := proxy.Leaf.Verify(x509.VerifyOptions{Roots: serving, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the serving authority vouches for the front-proxy client: the front proxy needs an authority of its own")
	}
	kwok, err := tls.LoadX509KeyPair(p.path(kwokCertFile), p.path(kwokKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kwok.Leaf.Verify(x509.VerifyOptions{Roots: frontProxy, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a serving certificate passes as the front proxy")
	}

	// Every file a flag names exists.
	args := p.metricsServerArgs("/k/kubeconfig")
	for _, f := range p.apiServerFlags() {
		args = append(args, "--"+f.name+"="+f.value)
	}
	for _, arg := range args {
		if _, value, _ := strings.Cut(arg, "="); strings.HasPrefix(value, dir) {
			if _, err := os.Stat(value); err != nil {
				t.Errorf("%s: %v", arg, err)
			}
		}
	}
}

// pool reads a PEM certificate file into a pool.
func pool(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode(data); block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s holds no PEM certificate", path)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(data)
	return p
}

func TestResourceMetricsPath(t *testing.T) {
	if got, want := resourceMetricsPath("node-1"), "/metrics/nodes/node-1/metrics/resource"; got != want {
		t.Errorf("resourceMetricsPath = %q, want %q", got, want)
	}
}
