package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// TestCABundle: the image's bundle holds every root of the module but those it constrains, in
// the module's order, each a CA certificate that crypto/x509 parses; and the release tool names
// the module at the version go.mod requires.
func TestCABundle(t *testing.T) {
	data, n := caBundle()
	certs := parseBundle(t, data)
	var want []string
	for root := range bundle.Roots() {
		if root.Constraint == nil {
			want = append(want, fingerprint(root.Certificate))
		}
	}
	var got []string
	for _, c := range certs {
		got = append(got, fingerprint(c.Raw))
		if !c.IsCA {
			t.Errorf("%s is not a CA certificate", c.Subject)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the bundle's roots (-the module's unconstrained roots +the bundle):\n%s", diff)
	}
	if n != len(certs) || n < 100 {
		t.Errorf("caBundle counts %d roots, the PEM holds %d; Mozilla's set has more than 100", n, len(certs))
	}
	source, err := caBundleSource()
	if err != nil {
		t.Fatal(err)
	}
	if want := goModRequirement(t, caBundleModule); source != want {
		t.Errorf("the bundle's source %q, go.mod requires %q", source, want)
	}
}

// parseBundle returns the certificates of a PEM bundle, failing the test on a block that is not
// a certificate or does not parse, and on anything but PEM blocks.
func parseBundle(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var certs []*x509.Certificate
	for rest := data; len(bytes.TrimSpace(rest)) > 0; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			t.Fatalf("the bundle has %d bytes that are no PEM block after %d certificates", len(rest), len(certs))
		}
		if block.Type != "CERTIFICATE" {
			t.Fatalf("a PEM block of type %s in the bundle", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("certificate %d of the bundle: %v", len(certs), err)
		}
		certs = append(certs, c)
	}
	return certs
}

// fingerprint is a certificate's SHA-256, hex.
func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// goModRequirement returns module@version as this module's go.mod requires it.
func goModRequirement(t *testing.T, module string) string {
	t.Helper()
	f, err := os.Open("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(s.Text()), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return module + "@" + fields[1]
		}
	}
	t.Fatalf("go.mod does not require %s", module)
	return ""
}
