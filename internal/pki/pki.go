// Package pki makes certificate authorities and the certificates they sign, for a local cluster
// and for tests: ECDSA P-256 keys, PEM out. Nothing here is meant for a production authority.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Authority is a certificate authority whose certificates are valid for Validity.
type Authority struct {
	cert     *x509.Certificate
	key      crypto.Signer
	pem      []byte
	validity time.Duration
}

// NewAuthority makes a self-signed certificate authority named name whose certificate, and
// every certificate it issues, is valid for validity from a minute ago.
func NewAuthority(name string, validity time.Duration) (*Authority, error) {
	return newAuthority(name, nil, validity)
}

// NewLookalikeAuthority is NewAuthority for an authority whose certificate has the subject of
// another's, byte for byte, and a key of its own. A client that trusts the other takes it for a
// candidate issuer of what this one signs, fails on the signature, and names the other in its
// error (crypto/x509: "... while trying to verify candidate authority certificate NAME"): a
// test can so show which roots a client loaded without holding a key of theirs.
func NewLookalikeAuthority(of *x509.Certificate, validity time.Duration) (*Authority, error) {
	return newAuthority(of.Subject.String(), of.RawSubject, validity)
}

// newAuthority makes the authority: named name, with the subject rawSubject when not nil.
func newAuthority(name string, rawSubject []byte, validity time.Duration) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of %s: %w", name, err)
	}
	template, err := certTemplate(name, validity)
	if err != nil {
		return nil, err
	}
	template.RawSubject = rawSubject
	template.IsCA = true
	template.BasicConstraintsValid = true
	template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	return &Authority{cert: cert, key: key, validity: validity, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// CertPEM returns the authority's certificate in PEM: what a client trusts.
func (a *Authority) CertPEM() []byte { return a.pem }

// Issue signs a certificate for name, a client certificate for usage ExtKeyUsageClientAuth and
// a serving one for ExtKeyUsageServerAuth, valid for the given DNS names and IP addresses, and
// returns it and its key in PEM.
func (a *Authority) Issue(name string, usage x509.ExtKeyUsage, dnsNames []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the key of %s: %w", name, err)
	}
	template, err := certTemplate(name, a.validity)
	if err != nil {
		return nil, nil, err
	}
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	template.DNSNames = dnsNames
	template.IPAddresses = ips
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate of %s: %w", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the key of %s: %w", name, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// certTemplate is what every certificate here has: a random serial number, a common name, and
// a validity that starts a little in the past, so that a clock a second behind accepts it.
func certTemplate(name string, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
	}, nil
}
