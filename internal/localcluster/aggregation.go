package localcluster

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/internal/pki"
)

// The metrics pipeline of the local cluster: kwok serves each fake Node's kubelet resource
// metrics, metrics-server scrapes them, and kube-apiserver's aggregation layer serves
// metrics-server's API, metrics.k8s.io, as kubectl top and the verticalscaler read it.
const (
	// metricsServerBin names metrics-server's process and log.
	metricsServerBin = "metrics-server"
	// metricsAPIService is the APIService that registers metrics-server with kube-apiserver.
	metricsAPIService = "v1beta1.metrics.k8s.io"
	// frontProxyClient is the name in the certificate kube-apiserver presents to metrics-server
	// when it proxies a request; metrics-server accepts only that name (requestheader-allowed-names,
	// which it reads from kube-apiserver's extension-apiserver-authentication ConfigMap).
	frontProxyClient = "front-proxy-client"
	// metricResolution is how often metrics-server scrapes kwok. A Pod's CPU usage is a rate
	// between two scrapes, and metrics-server drops the first, where kwok's CPU counter is still
	// zero: a new Pod's first metrics come three scrapes after kwok sees it.
	metricResolution = "15s"
)

// resourceMetricsPathPattern is the path at which kwok's Metric in Config.KwokMetrics serves a
// Node's resource metrics, {nodeName} standing for the Node's name. Each fake Node names its own
// in the annotation metrics.k8s.io/resource-metrics-path, which metrics-server scrapes instead of
// the kubelet's /metrics/resource: one kwok plays every Node on one port.
const resourceMetricsPathPattern = "/metrics/nodes/{nodeName}/metrics/resource"

// resourceMetricsPath is resourceMetricsPathPattern for one Node.
func resourceMetricsPath(node string) string {
	return strings.ReplaceAll(resourceMetricsPathPattern, "{nodeName}", node)
}

// metricsPipeline is what the processes of the metrics pipeline share: the ports of kwok's
// kubelet endpoint and of metrics-server, and the certificates, in dir.
//
// Two authorities, each made for this run: the front-proxy one signs only the certificate
// kube-apiserver proxies with (kube-apiserver trusts whatever it signs to assert any user in
// request headers, so it signs nothing else), and the serving one signs the certificates of
// kwok and metrics-server, so that metrics-server verifies kwok and kube-apiserver verifies
// metrics-server, as in a real cluster, without --kubelet-insecure-tls or insecureSkipTLSVerify.
type metricsPipeline struct {
	dir string
	// kwokPort is kwok's kubelet endpoint on 127.0.0.1, the port of every fake Node.
	kwokPort int
	// metricsServerPort is metrics-server's HTTPS port on 127.0.0.1.
	metricsServerPort int
	// servingCA is the serving authority's certificate in PEM: the APIService's caBundle.
	servingCA []byte
}

// The files of a metricsPipeline, in its directory.
const (
	frontProxyCAFile      = "front-proxy-ca.crt"
	frontProxyCertFile    = "front-proxy-client.crt"
	frontProxyKeyFile     = "front-proxy-client.key"
	servingCAFile         = "serving-ca.crt"
	kwokCertFile          = "kwok.crt"
	kwokKeyFile           = "kwok.key"
	metricsServerCertFile = "metrics-server.crt"
	metricsServerKeyFile  = "metrics-server.key"
)

// newMetricsPipeline picks two free ports on 127.0.0.1 and writes the certificates into dir.
// Free ports rather than the kubelet's 10250 and metrics-server's 4443, so that two local
// clusters (`make run` and `make test-e2e`, or two worktrees) can run side by side.
func newMetricsPipeline(dir string) (*metricsPipeline, error) {
	p := &metricsPipeline{dir: dir}
	var err error
	if p.kwokPort, err = freePort(); err != nil {
		return nil, err
	}
	if p.metricsServerPort, err = freePort(); err != nil {
		return nil, err
	}
	frontProxy, err := pki.NewAuthority("localcluster-front-proxy-ca", certValidity)
	if err != nil {
		return nil, err
	}
	serving, err := pki.NewAuthority("localcluster-serving-ca", certValidity)
	if err != nil {
		return nil, err
	}
	p.servingCA = serving.CertPEM()
	loopback := []net.IP{net.IPv4(127, 0, 0, 1)}
	proxyCert, proxyKey, err := frontProxy.Issue(frontProxyClient, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}
	// kube-apiserver checks the name of the Service behind the APIService, whatever address
	// the ExternalName resolves to.
	metricsCert, metricsKey, err := serving.Issue(metricsServerBin, x509.ExtKeyUsageServerAuth,
		[]string{metricsServerBin + ".kube-system.svc", "localhost"}, loopback)
	if err != nil {
		return nil, err
	}
	// metrics-server connects to the Node's InternalIP, kwok's --node-ip.
	kwokCert, kwokKey, err := serving.Issue("kwok", x509.ExtKeyUsageServerAuth, []string{"localhost"}, loopback)
	if err != nil {
		return nil, err
	}
	return p, writeFiles(dir, map[string][]byte{
		frontProxyCAFile:      frontProxy.CertPEM(),
		frontProxyCertFile:    proxyCert,
		frontProxyKeyFile:     proxyKey,
		servingCAFile:         serving.CertPEM(),
		kwokCertFile:          kwokCert,
		kwokKeyFile:           kwokKey,
		metricsServerCertFile: metricsCert,
		metricsServerKeyFile:  metricsKey,
	})
}

// path returns the path of one of the pipeline's files.
func (p *metricsPipeline) path(name string) string { return filepath.Join(p.dir, name) }

// flag is one command-line flag of a process, for Configure().Set.
type flag struct{ name, value string }

// apiServerFlags turn on kube-apiserver's aggregation layer. The requestheader flags say whom
// kube-apiserver's front proxy is (the client certificate an aggregated server must accept, and
// the headers that carry the user); the proxy-client flags are the certificate it proxies with.
// --advertise-address=127.0.0.1 keeps kube-apiserver from advertising the machine's address,
// and the default endpoint reconciler refuses a loopback address, hence
// --endpoint-reconciler-type=none: nothing in the local cluster uses the kubernetes Service's
// endpoints.
func (p *metricsPipeline) apiServerFlags() []flag {
	return []flag{
		{"requestheader-client-ca-file", p.path(frontProxyCAFile)},
		{"requestheader-allowed-names", frontProxyClient},
		{"requestheader-username-headers", "X-Remote-User"},
		{"requestheader-group-headers", "X-Remote-Group"},
		{"requestheader-extra-headers-prefix", "X-Remote-Extra-"},
		{"proxy-client-cert-file", p.path(frontProxyCertFile)},
		{"proxy-client-key-file", p.path(frontProxyKeyFile)},
		{"advertise-address", "127.0.0.1"},
		{"endpoint-reconciler-type", "none"},
	}
}

// metricsServerArgs runs metrics-server as the admin, on 127.0.0.1 only. It scrapes each Node
// at its InternalIP and the port in its status (kwok's --node-ip and --node-port), checking
// kwok's certificate against the serving authority.
func (p *metricsPipeline) metricsServerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.metricsServerPort),
		"--tls-cert-file=" + p.path(metricsServerCertFile),
		"--tls-private-key-file=" + p.path(metricsServerKeyFile),
		"--kubelet-certificate-authority=" + p.path(servingCAFile),
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-use-node-status-port",
		"--metric-resolution=" + metricResolution,
	}
}

// metricsServerService is the Service the APIService points at: an ExternalName for localhost,
// because Endpoints and EndpointSlices refuse loopback addresses, so that kube-apiserver
// connects to metrics-server on this machine (as kwokctl does).
func (p *metricsPipeline) metricsServerService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: metricsServerBin},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(p.metricsServerPort)}},
		},
	}
}

// metricsAPIServiceObject registers metrics-server as metrics.k8s.io/v1beta1, with the
// serving authority to verify it by. It is unstructured so that the product's module needs no
// dependency on k8s.io/kube-aggregator for one object.
func (p *metricsPipeline) metricsAPIServiceObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": metricsAPIService},
		"spec": map[string]any{
			"group":                "metrics.k8s.io",
			"version":              "v1beta1",
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
			"caBundle":             base64.StdEncoding.EncodeToString(p.servingCA),
			"service": map[string]any{
				"namespace": "kube-system",
				"name":      metricsServerBin,
				"port":      int64(p.metricsServerPort),
			},
		},
	}}
}

// startMetricsServer starts metrics-server and registers it with kube-apiserver.
func (c *Cluster) startMetricsServer(ctx context.Context, path string, p *metricsPipeline) error {
	if err := c.startProcess(metricsServerBin, path, p.metricsServerArgs(c.Kubeconfig)...); err != nil {
		return err
	}
	if err := c.Client.Create(ctx, p.metricsServerService()); err != nil {
		return fmt.Errorf("creating metrics-server's Service: %w", err)
	}
	if err := c.Client.Create(ctx, p.metricsAPIServiceObject()); err != nil {
		return fmt.Errorf("creating the APIService %s: %w", metricsAPIService, err)
	}
	return nil
}

// metricsAPIAvailable reports whether kube-apiserver reaches metrics-server: the APIService has
// the condition Available=True.
func (c *Cluster) metricsAPIAvailable(ctx context.Context) (bool, error) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("apiregistration.k8s.io/v1")
	obj.SetKind("APIService")
	if err := c.Client.Get(ctx, client.ObjectKey{Name: metricsAPIService}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	conditions, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil {
		return false, fmt.Errorf("APIService %s: %w", metricsAPIService, err)
	}
	for _, cond := range conditions {
		m, ok := cond.(map[string]any)
		if ok && m["type"] == "Available" {
			if m["status"] == "True" {
				return true, nil
			}
			return false, fmt.Errorf("APIService %s not available: %v: %v", metricsAPIService, m["reason"], m["message"])
		}
	}
	return false, nil
}

// freePort returns a port on 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	return port, nil
}
