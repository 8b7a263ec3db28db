package localcluster

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/switchboard/internal/manifests"
)

// controllerManagerArgs runs every controller of kube-controller-manager (garbage collection,
// Deployments, ReplicaSets, namespaces, ...) as the admin: without
// --use-service-account-credentials it needs no per-controller service accounts, and without
// the service-account private key its token controller stays off (TokenRequest still works).
// --secure-port=0 serves nothing, so it takes no port.
func controllerManagerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--secure-port=0",
	}
}

// schedulerArgs runs kube-scheduler as the admin, serving nothing.
func schedulerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	}
}

// kwokPodCIDR is where kwok takes fake Pod IPs from. kwok's default, a /24, runs out after about
// 250 Pods, fewer than the e2e tests run.
const kwokPodCIDR = "10.244.0.0/16"

// nodeLeaseSeconds is the duration of the Node Leases kwok renews (as kubelet's default), which
// keeps kube-controller-manager from marking the fake Nodes NotReady.
const nodeLeaseSeconds = "40"

// kwokArgs runs kwok on every Node with the given Stages (kwok's, and those of a resize),
// metrics configuration and further configuration files. Its server
// (the fake kubelet endpoints: logs, exec, and the resource metrics metrics-server scrapes)
// listens on the pipeline's port of the loopback interface only, with a certificate of the
// serving authority; --node-ip and --node-port put that address in every Node's status, where
// metrics-server looks for a kubelet.
func kwokArgs(kubeconfig, stages, resizeStages, metrics string, configs []string, p *metricsPipeline) []string {
	port := strconv.Itoa(p.kwokPort)
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + stages,
		"--config=" + resizeStages,
		"--config=" + metrics,
		"--manage-all-nodes=true",
		"--node-lease-duration-seconds=" + nodeLeaseSeconds,
		"--cidr=" + kwokPodCIDR,
		"--server-address=127.0.0.1:" + port,
		"--node-ip=127.0.0.1",
		"--node-port=" + port,
		"--tls-cert-file=" + p.path(kwokCertFile),
		"--tls-private-key-file=" + p.path(kwokKeyFile),
	}
	for _, c := range configs {
		args = append(args, "--config="+c)
	}
	return args
}

// fakeNode returns a Node that kwok plays the kubelet of. Its capacity is large enough for
// hundreds of small Pods, and it has no taint, so that Pods need no toleration to land on it.
func fakeNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				"kwok.x-k8s.io/node": "fake",
				// The TTL controller would otherwise write this annotation itself.
				"node.alpha.kubernetes.io/ttl": "0",
				// metrics-server scrapes this path of kwok instead of the kubelet's.
				"metrics.k8s.io/resource-metrics-path": resourceMetricsPath(name),
			},
			Labels: map[string]string{
				"kubernetes.io/arch":     "amd64",
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/role":     "agent",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
		},
	}
}

// checkStages checks that data holds kwok Stages for both Nodes and Pods: without a Node stage
// the Nodes never become Ready, without a Pod stage no Pod does, and without any kwok exits
// with "no stages found".
func checkStages(data []byte) error {
	docs, err := manifests.Decode(data)
	if err != nil {
		return err
	}
	kinds := map[string]bool{}
	for i, doc := range docs {
		if doc.GetAPIVersion() != "kwok.x-k8s.io/v1alpha1" || doc.GetKind() != "Stage" {
			return fmt.Errorf("object %d is a %s %s, not a kwok.x-k8s.io/v1alpha1 Stage", i+1, doc.GetAPIVersion(), doc.GetKind())
		}
		kind, _, err := unstructured.NestedString(doc.Object, "spec", "resourceRef", "kind")
		if err != nil || kind == "" {
			return fmt.Errorf("object %d (Stage %q) has no spec.resourceRef.kind", i+1, doc.GetName())
		}
		kinds[kind] = true
	}
	for _, kind := range []string{"Node", "Pod"} {
		if !kinds[kind] {
			return fmt.Errorf("no Stage for %ss", kind)
		}
	}
	return nil
}

// checkKwokMetrics checks that data holds kwok's metrics configuration: some usage for Pods
// (a ClusterResourceUsage or ResourceUsage), and a Metric at resourceMetricsPathPattern, the path
// the fake Nodes name for metrics-server. Without the Metric metrics-server finds nothing to
// scrape; without usage every Pod uses nothing.
func checkKwokMetrics(data []byte) error {
	docs, err := manifests.Decode(data)
	if err != nil {
		return err
	}
	var usage, metric bool
	for i, doc := range docs {
		if doc.GetAPIVersion() != "kwok.x-k8s.io/v1alpha1" {
			return fmt.Errorf("object %d is a %s %s, not kwok.x-k8s.io/v1alpha1", i+1, doc.GetAPIVersion(), doc.GetKind())
		}
		switch doc.GetKind() {
		case "ClusterResourceUsage", "ResourceUsage":
			usage = true
		case "Metric":
			path, _, _ := unstructured.NestedString(doc.Object, "spec", "path")
			metric = metric || path == resourceMetricsPathPattern
		default:
			return fmt.Errorf("object %d is a %s, not a ClusterResourceUsage, ResourceUsage or Metric", i+1, doc.GetKind())
		}
	}
	if !usage {
		return errors.New("no ClusterResourceUsage or ResourceUsage")
	}
	if !metric {
		return fmt.Errorf("no Metric with path %s", resourceMetricsPathPattern)
	}
	return nil
}
