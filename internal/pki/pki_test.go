package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
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

// TestLookalikeAuthority: what a lookalike signs verifies against the lookalike, and against
// the authority it looks like fails with crypto/x509's error naming that authority, which is
// how a test tells which roots a client loaded.
func TestLookalikeAuthority(t *testing.T) {
	original, err := NewAuthority("Original Root CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	lookalike, err := NewLookalikeAuthority(original.cert, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := lookalike.Issue("server", x509.ExtKeyUsageServerAuth, nil, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(authority *Authority) error {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(authority.CertPEM())
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
	if err := verify(lookalike); err != nil {
		t.Errorf("verifying against the lookalike: %v", err)
	}
	want := `x509: certificate signed by unknown authority (possibly because of "x509: ECDSA verification failure" while trying to verify candidate authority certificate "Original Root CA")`
	if err := verify(original); err == nil || err.Error() != want {
		t.Errorf("verifying against the original: %v, want %s", err, want)
	}
}
