package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/pki"
	"github.com/example/switchboard/internal/testenv"
)

// caBundle is the image's CA bundle, which `make test-e2e` takes out of the image beside the
// manager binary.
var caBundle = os.Getenv("SWITCHBOARD_E2E_CA_BUNDLE")

// The image's user (its configuration's User) and the path where it holds the bundle.
const (
	imageUser     = 65532
	imageCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// TestWebhookTrustsTheImagesCABundle runs the image's manager as a container runs it: chrooted
// into a root that holds the image's /manager and its CA bundle at /etc/ssl/certs, as the
// image's user, with no environment but its own, against envtest, with --webhook-url on an
// HTTPS server on loopback. The server's certificate is signed by a test CA that has the
// subject of a root of the image's bundle and a key of its own, so that crypto/x509 names that
// root when it refuses the certificate: proof that the manager loaded the image's bundle, from
// its standard path. Each case changes the bundle through the environment as users do:
//   - the image's bundle alone: refused, naming the root of the bundle;
//   - SSL_CERT_FILE naming the image's bundle with the test CA: the post arrives;
//   - SSL_CERT_DIR naming a directory with the test CA, laid out as the kubelet mounts a
//     ConfigMap (the chart's trustedCA): the post arrives;
//   - SSL_CERT_DIR naming a directory with another CA: refused, naming the root of the bundle,
//     which SSL_CERT_DIR therefore adds to rather than replaces.
//
// chroot needs root, as `make test-e2e` runs in CI; elsewhere the test is skipped.
func TestWebhookTrustsTheImagesCABundle(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("runs the manager chrooted into the image's files: needs root")
	}
	if caBundle == "" {
		t.Fatal("SWITCHBOARD_E2E_CA_BUNDLE names the image's CA bundle: run `make test-e2e`, which takes it out of the image")
	}
	bundle, err := os.ReadFile(caBundle)
	if err != nil {
		t.Fatal(err)
	}
	imitated := firstNamedRoot(t, bundle)
	testCA, err := pki.NewLookalikeAuthority(imitated, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := pki.NewAuthority("other-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	receiver := startHTTPSWebhook(t, testCA)

	env := testenv.StartForTest(t)
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testenv.ManagerNamespace}}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{"/manager", readFile(t, manager), 0o555},
		{imageCABundle, bundle, 0o444},
		{"/etc/switchboard/bundle-and-test-ca.crt", append(append([]byte{}, bundle...), testCA.CertPEM()...), 0o444},
		{"/kubeconfig", kubeconfigOf(t, env), 0o444},
	} {
		writeRootFile(t, root, f.path, f.data, f.mode)
	}
	mountLikeKubelet(t, filepath.Join(root, "etc/switchboard/trusted-ca"), "ca.crt", testCA.CertPEM())
	mountLikeKubelet(t, filepath.Join(root, "etc/switchboard/other-ca"), "ca.crt", otherCA.CertPEM())
	if err := os.Chmod(root, 0o755); err != nil { // t.TempDir's 0700 would keep the image's user out
		t.Fatal(err)
	}

	refused := regexp.MustCompile(`x509: certificate signed by unknown authority \(possibly because of \\?"[^"\\]+\\?" while trying to verify candidate authority certificate \\?"` +
		regexp.QuoteMeta(imitated.Subject.CommonName) + `\\?"\)`)
	for _, tc := range []struct {
		name    string
		env     []string
		arrives bool
	}{
		{"the image's bundle alone", nil, false},
		{"SSL_CERT_FILE with the test CA", []string{"SSL_CERT_FILE=/etc/switchboard/bundle-and-test-ca.crt"}, true},
		{"SSL_CERT_DIR with the test CA", []string{"SSL_CERT_DIR=/etc/switchboard/trusted-ca"}, true},
		{"SSL_CERT_DIR adds to the image's bundle", []string{"SSL_CERT_DIR=/etc/switchboard/other-ca"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testenv.RunManagerAs(t, testenv.Command{Binary: "/manager", Root: root,
				User: &syscall.Credential{Uid: imageUser, Gid: imageUser},
				Env:  append([]string{"POD_NAMESPACE=" + testenv.ManagerNamespace}, tc.env...)},
				"/kubeconfig", []string{"--controllers=configmapwatcher"}, "--webhook-url="+receiver.url)
			eventually(t, 90*time.Second, readyCheck(m))
			ns := changeAWatchedConfigMap(t, env.Client)
			if tc.arrives {
				eventually(t, 30*time.Second, func() error {
					if n := receiver.posts(ns); n != 1 {
						return fmt.Errorf("%d posts about namespace %s so far, want 1", n, ns)
					}
					return nil
				})
				return
			}
			// The notifier tries four times over seven seconds, then logs why it gave up.
			eventually(t, 60*time.Second, func() error {
				if !refused.MatchString(m.Output()) {
					return fmt.Errorf("the manager has not logged crypto/x509's refusal naming %q", imitated.Subject.CommonName)
				}
				return nil
			})
			if n := receiver.posts(ns); n != 0 {
				t.Errorf("%d posts arrived through a certificate the manager must refuse", n)
			}
		})
	}
}

// firstNamedRoot returns the bundle's first certificate with a common name, which crypto/x509's
// error names.
func firstNamedRoot(t *testing.T, bundle []byte) *x509.Certificate {
	t.Helper()
	for rest := bundle; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			t.Fatalf("no certificate with a common name in the image's CA bundle %s", caBundle)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("the image's CA bundle: %v", err)
		}
		if c.Subject.CommonName != "" {
			return c
		}
	}
}

// httpsWebhook records the notifications posted to it, over TLS with a certificate for
// 127.0.0.1 that its CA signed.
type httpsWebhook struct {
	url string
	mu  sync.Mutex
	// byNamespace counts the notifications about each namespace's workloads.
	byNamespace map[string]int
}

func startHTTPSWebhook(t *testing.T, ca *pki.Authority) *httpsWebhook {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue("webhook", x509.ExtKeyUsageServerAuth, nil, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	w := &httpsWebhook{byNamespace: map[string]int{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		var n struct {
			Namespace string `json:"namespace"`
		}
		if err := json.NewDecoder(req.Body).Decode(&n); err != nil {
			t.Errorf("a post that is no notification: %v", err)
			return
		}
		w.mu.Lock()
		w.byNamespace[n.Namespace]++
		w.mu.Unlock()
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	// The refused handshakes are expected: the manager's log says why, not the server's.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	w.url = srv.URL + "/hooks/switchboard"
	return w
}

// posts returns how many notifications about ns arrived.
func (w *httpsWebhook) posts(ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byNamespace[ns]
}

// changeAWatchedConfigMap creates a Deployment opted in to rolls of its ConfigMap, waits until
// the configmapwatcher has recorded it, changes the ConfigMap, and returns the namespace: with
// --webhook-url the change is then posted.
func changeAWatchedConfigMap(t *testing.T, c client.Client) string {
	t.Helper()
	ctx := context.Background()
	ns := testenv.Namespace(t, c, "e2e-cabundle-")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"LOG_LEVEL": "info"}}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}}}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}},
		Spec:       appsv1.DeploymentSpec{Selector: selectorOf("web"), Template: templateOf("web", spec)},
	}
	for _, obj := range []client.Object{cm, d} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
			return fmt.Errorf("the Deployment is not recorded yet")
		}
		return nil
	})
	cm.Data["LOG_LEVEL"] = "debug"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	return ns
}

// kubeconfigOf returns a kubeconfig file's content for envtest's admin, its certificates
// inline, so that it works from inside the root.
func kubeconfigOf(t *testing.T, env *testenv.Env) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(path, env.Config, ""); err != nil {
		t.Fatal(err)
	}
	return readFile(t, path)
}

// writeRootFile writes a file at path inside root, owned by root as the image's files are.
func writeRootFile(t *testing.T, root, path string, data []byte, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(full, mode); err != nil { // the umask may have taken bits off
		t.Fatal(err)
	}
}

// mountLikeKubelet lays out a file as the kubelet mounts a ConfigMap's key into dir: the file
// in a timestamped directory, ..data a link to it, and the key's name a link through ..data.
// crypto/x509 reads a certificate directory with links that point inside it skipped, so the
// layout matters.
func mountLikeKubelet(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	const version = "..2026_01_02_03_04_05.000000001"
	writeRootFile(t, dir, filepath.Join(version, name), data, 0o444)
	if err := os.Symlink(version, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// readFile reads a file, failing the test on error.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
