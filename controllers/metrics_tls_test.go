package controllers_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/example/switchboard/internal/pki"
	"github.com/example/switchboard/internal/testenv"
)

// monitoredOverlay is the overlay with the cert-manager component and the ServiceMonitor.
var monitoredOverlay = filepath.Join("..", "config", "overlays", "monitored")

// TestMetricsCertificateVerifies plays cert-manager and Prometheus around a real manager, with
// what config/overlays/monitored says: a certificate for the Certificate's DNS names, signed by a
// CA (the serving Secret's ca.crt), in a Secret volume laid out as the kubelet lays one out; the
// manager run with the Deployment's args; and a scrape with the ServiceMonitor's tlsConfig (that
// CA, that server name) and a ServiceAccount token bound to switchboard-metrics-reader. The scrape
// verifies the certificate, and so does not one with another CA or server name; when cert-manager
// renews the certificate, the manager serves the new one without a restart.
func TestMetricsCertificateVerifies(t *testing.T) {
	m := readMonitored(t)
	ctx := context.Background()
	ns := env.Namespace(t, "metrics-tls-")

	ca, err := pki.NewAuthority("switchboard-metrics-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(t.TempDir(), "metrics-certs")
	firstSerial := writeServingSecret(t, certDir, "..v1", ca, m)

	token := metricsReaderToken(t, ns, m.readerRole)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		t.Fatal(err)
	}
	metrics, probes := testenv.FreeAddress(t), testenv.FreeAddress(t)
	args := []string{"--kubeconfig=" + kubeconfig, "--leader-election-namespace=" + ns}
	for _, arg := range m.args {
		switch {
		case strings.HasPrefix(arg, "--metrics-cert-path="):
			arg = "--metrics-cert-path=" + certDir
		case strings.HasPrefix(arg, "--metrics-bind-address="):
			arg = "--metrics-bind-address=" + metrics
		case strings.HasPrefix(arg, "--health-probe-bind-address="):
			arg = "--health-probe-bind-address=" + probes
		}
		args = append(args, arg)
	}
	p := testenv.RunProcess(t, testenv.Command{Binary: testenv.BuildBinary(t, "."), ProbeAddress: probes, Args: args})
	testenv.Eventually(t, 2*time.Minute, func() error { return p.Ready(ctx) })

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	prometheus := &tls.Config{RootCAs: roots, ServerName: m.serverName, MinVersion: tls.VersionTLS12}
	var body string
	testenv.Eventually(t, 30*time.Second, func() error {
		body, err = scrapeTLS(ctx, metrics, prometheus, token)
		return err
	})
	if !strings.Contains(body, "switchboard_controller_leader") {
		t.Errorf("the verified scrape has no switchboard_controller_leader:\n%s", body)
	}
	if got, err := servedSerial(metrics, prometheus); err != nil || got != firstSerial {
		t.Errorf("served certificate serial %s (%v), want the issued %s", got, err, firstSerial)
	}

	other, err := pki.NewAuthority("another-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherRoots := x509.NewCertPool()
	otherRoots.AppendCertsFromPEM(other.CertPEM())
	for name, cfg := range map[string]*tls.Config{
		"another CA":          {RootCAs: otherRoots, ServerName: m.serverName, MinVersion: tls.VersionTLS12},
		"another server name": {RootCAs: roots, ServerName: "switchboard.example.com", MinVersion: tls.VersionTLS12},
	} {
		var unknown x509.UnknownAuthorityError
		var hostname x509.HostnameError
		if _, err := scrapeTLS(ctx, metrics, cfg, token); err == nil || !(errors.As(err, &unknown) || errors.As(err, &hostname)) {
			t.Errorf("a scrape with %s: %v, want a certificate verification error", name, err)
		}
	}

	// cert-manager renews: the kubelet writes the Secret's new files and swaps ..data.
	renewed := writeServingSecret(t, certDir, "..v2", ca, m)
	testenv.Eventually(t, time.Minute, func() error {
		got, err := servedSerial(metrics, prometheus)
		if err == nil && got != renewed {
			err = fmt.Errorf("served certificate serial %s, want the renewed %s", got, renewed)
		}
		return err
	})
	if _, err := scrapeTLS(ctx, metrics, prometheus, token); err != nil {
		t.Errorf("a scrape after the renewal: %v", err)
	}
}

// monitored is what the test reads of config/overlays/monitored.
type monitored struct {
	// args are the manager's.
	args []string
	// dnsNames are the serving Certificate's; serverName the ServiceMonitor's.
	dnsNames   []string
	serverName string
	// files maps each key of the serving Secret the manager's volume mounts to its file name.
	files map[string]string
	// readerRole is switchboard-metrics-reader, for Prometheus's ServiceAccount.
	readerRole *rbacv1.ClusterRole
}

// readMonitored renders config/overlays/monitored and reads what a scrape of the manager needs.
func readMonitored(t *testing.T) monitored {
	t.Helper()
	objs := testenv.Kustomize(t, monitoredOverlay)
	var m monitored
	var secretName string
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ServiceMonitor":
			endpoints, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
			m.serverName, _, _ = unstructured.NestedString(endpoints[0].(map[string]any), "tlsConfig", "serverName")
			secretName, _, _ = unstructured.NestedString(endpoints[0].(map[string]any), "tlsConfig", "ca", "secret", "name")
		case "Deployment":
			var d appsv1.Deployment
			convert(t, obj, &d)
			m.args = d.Spec.Template.Spec.Containers[0].Args
			m.files = map[string]string{}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					for _, item := range v.Secret.Items {
						m.files[item.Key] = item.Path
					}
				}
			}
		case "ClusterRole":
			if obj.GetName() == "switchboard-metrics-reader" {
				m.readerRole = &rbacv1.ClusterRole{}
				convert(t, obj, m.readerRole)
			}
		}
	}
	for _, obj := range objs {
		if name, _, _ := unstructured.NestedString(obj.Object, "spec", "secretName"); obj.GetKind() == "Certificate" && name == secretName {
			m.dnsNames, _, _ = unstructured.NestedStringSlice(obj.Object, "spec", "dnsNames")
		}
	}
	if m.serverName == "" || len(m.dnsNames) == 0 || len(m.files) == 0 || m.readerRole == nil || !slices.ContainsFunc(m.args, func(a string) bool { return strings.HasPrefix(a, "--metrics-cert-path=") }) {
		t.Fatalf("%s: want a ServiceMonitor with a serverName and a CA Secret, its Certificate's dnsNames, the Secret mounted into the manager with --metrics-cert-path, and switchboard-metrics-reader; got %+v", monitoredOverlay, m)
	}
	return m
}

func convert(t *testing.T, obj *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// writeServingSecret issues a serving certificate for the Certificate's DNS names and writes the
// Secret's files into dir as the kubelet updates a Secret volume: the files in a new directory
// named version, then the symbolic link ..data swapped to it at once; the mounted names link
// through ..data. It returns the certificate's serial number.
func writeServingSecret(t *testing.T, dir, version string, ca *pki.Authority, m monitored) string {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue("switchboard-metrics", x509.ExtKeyUsageServerAuth, m.dnsNames, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, version), 0o700); err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}
	for key, file := range m.files {
		if err := os.WriteFile(filepath.Join(dir, version, file), data[key], 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, file)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", file), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	leaf, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(leaf.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber.String()
}

// metricsReaderToken returns a token of a new ServiceAccount bound to role, as Prometheus's is.
func metricsReaderToken(t *testing.T, ns string, role *rbacv1.ClusterRole) string {
	t.Helper()
	ctx := context.Background()
	role = role.DeepCopy()
	role.ResourceVersion = ""
	if err := env.Client.Create(ctx, role); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	if err := env.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-prometheus"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa.Name}}}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
	clientset, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrapeTLS gets /metrics at addr over TLS with cfg and a bearer token, as Prometheus does, and
// returns the page.
func scrapeTLS(ctx context.Context, addr string, cfg *tls.Config, token string) (string, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), nil
}

// servedSerial returns the serial number of the certificate the server at addr presents, verified
// with cfg.
func servedSerial(addr string, cfg *tls.Config) (string, error) {
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}
