package main

import (
	"bytes"
	"encoding/pem"
	"errors"
	"runtime/debug"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's CA bundle: where Go's crypto/x509 reads the system roots on Linux (the first file
// it tries; SSL_CERT_FILE replaces it, SSL_CERT_DIR adds directories), so that the manager
// verifies an https webhook as it would on a Debian host.
const (
	caBundlePath = "etc/ssl/certs/ca-certificates.crt"
	// caBundleModule is the Go module the bundle comes from: Mozilla's NSS roots as the Go
	// project packs them. Its version in go.mod is the bundle's version, so one commit gives
	// one bundle, and updating it is a go.mod change like any other.
	caBundleModule = "golang.org/x/crypto/x509roots/fallback"
	// labelCABundle is the OCI label (and index annotation) naming the bundle's source,
	// module@version.
	labelCABundle = "com.example.switchboard.ca-bundle"
)

// caBundle returns the image's CA bundle, PEM, in the module's order, and the number of roots it
// holds. A root the module constrains (NSS's distrust-after date: certificates it issued after
// that date are no longer trusted) is left out: a PEM file cannot carry the constraint, and
// trusting the root without it would accept what Mozilla has stopped accepting.
func caBundle() ([]byte, int) {
	var buf bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		// pem.Encode fails only when the writer does, and a bytes.Buffer does not.
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
		n++
	}
	return buf.Bytes(), n
}

// caBundleSource returns module@version of the bundle compiled into this program, from its
// build information, for the image's label.
func caBundleSource() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("the release tool has no build information: build it with `go build` in module mode (make release-tool)")
	}
	for _, dep := range info.Deps {
		if dep.Path == caBundleModule {
			if dep.Replace != nil {
				dep = dep.Replace
			}
			return dep.Path + "@" + dep.Version, nil
		}
	}
	return "", errors.New("the release tool's build information does not list " + caBundleModule)
}
