package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

// TestIssuedCertificateVerifies: a serving certificate verifies against its authority for the
// names it was issued for, and for no other name nor against another authority.
func TestIssuedCertificateVerifies(t *testing.T) {
	ca, err := NewAuthority("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewAuthority("other-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("server", x509.ExtKeyUsageServerAuth, []string{"svc.ns.svc"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	verify := func(authority *Authority, name string) error {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(authority.CertPEM())
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
	for _, name := range []string{"svc.ns.svc", "127.0.0.1"} {
		if err := verify(ca, name); err != nil {
			t.Errorf("verifying for %s: %v", name, err)
		}
	}
	if err := verify(ca, "other.ns.svc"); err == nil || !strings.Contains(err.Error(), "certificate is valid for") {
		t.Errorf("verifying for a name it was not issued for: %v, want a name mismatch", err)
	}
	if err := verify(other, "svc.ns.svc"); err == nil {
		t.Error("another authority vouches for the certificate")
	}
	if got := leaf.NotAfter.Sub(leaf.NotBefore); got != time.Hour+time.Minute {
		t.Errorf("validity %s, want an hour from a minute ago", got)
	}
}
