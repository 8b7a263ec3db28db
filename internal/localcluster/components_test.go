package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestKwokArgs(t *testing.T) {
	p := &metricsPipeline{dir: "/k/pki", kwokPort: 40123}
	got := kwokArgs("/k/kubeconfig", "/k/stages.yaml", "/k/resize.yaml", "/k/metrics.yaml", []string{"/k/exec.yaml"}, p)
	want := []string{
		"--kubeconfig=/k/kubeconfig",
		"--config=/k/stages.yaml",
		"--config=/k/resize.yaml",
		"--config=/k/metrics.yaml",
		"--manage-all-nodes=true",
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.0/16",
		"--server-address=127.0.0.1:40123",
		"--node-ip=127.0.0.1",
		"--node-port=40123",
		"--tls-cert-file=/k/pki/kwok.crt",
		"--tls-private-key-file=/k/pki/kwok.key",
		"--config=/k/exec.yaml",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kwok args (-want +got):\n%s", diff)
	}
}

// TestComponentsServeNothing checks that kube-controller-manager and kube-scheduler take no
// port, so that a local cluster never fails on a port another one holds, and that both use
// the admin kubeconfig for everything.
func TestComponentsServeNothing(t *testing.T) {
	for name, args := range map[string][]string{
		"kube-controller-manager": controllerManagerArgs("/k"),
		"kube-scheduler":          schedulerArgs("/k"),
	} {
		t.Run(name, func(t *testing.T) {
			for _, want := range []string{"--secure-port=0", "--leader-elect=false", "--kubeconfig=/k", "--authentication-kubeconfig=/k", "--authorization-kubeconfig=/k"} {
				if !contains(args, want) {
					t.Errorf("args %v lack %s", args, want)
				}
			}
		})
	}
}

func contains(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

func TestFakeNode(t *testing.T) {
	node := fakeNode("node-2")
	if node.Name != "node-2" || node.Labels["kubernetes.io/hostname"] != "node-2" {
		t.Errorf("name %q, hostname label %q; want node-2 for both", node.Name, node.Labels["kubernetes.io/hostname"])
	}
	if node.Annotations["kwok.x-k8s.io/node"] != "fake" {
		t.Errorf("annotations %v: kwok only plays Nodes annotated kwok.x-k8s.io/node=fake by convention", node.Annotations)
	}
	if got, want := node.Annotations["metrics.k8s.io/resource-metrics-path"], "/metrics/nodes/node-2/metrics/resource"; got != want {
		t.Errorf("resource metrics path annotation %q, want %q: metrics-server would scrape a path kwok does not serve", got, want)
	}
	if len(node.Spec.Taints) != 0 {
		t.Errorf("taints %v: Pods would need a toleration", node.Spec.Taints)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		q, ok := node.Status.Allocatable[r]
		if !ok || q.Cmp(resource.MustParse("1")) < 0 {
			t.Errorf("allocatable %s = %v: the scheduler would place nothing", r, node.Status.Allocatable)
		}
	}
	if node.Status.Allocatable.Pods().Value() < 200 {
		t.Errorf("allocatable pods %v: the e2e tests run hundreds of Pods", node.Status.Allocatable.Pods())
	}
}

// stageYAML is a minimal kwok Stage for kind.
func stageYAML(name, kind string) string {
	return fmt.Sprintf("apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:\n  resourceRef:\n    apiGroup: v1\n    kind: %s\n", name, kind)
}

func TestCheckStages(t *testing.T) {
	stage := stageYAML
	tests := []struct {
		name    string
		data    string
		wantErr string
	}{
		{name: "node and pod stages", data: stage("node-initialize", "Node") + "---\n" + stage("pod-ready", "Pod")},
		{name: "empty documents are skipped", data: "---\n" + stage("a", "Node") + "---\n---\n" + stage("b", "Pod") + "---\n"},
		{name: "empty", data: "", wantErr: "no Stage for Nodes"},
		{name: "no pod stage", data: stage("node-initialize", "Node"), wantErr: "no Stage for Pods"},
		{name: "not a stage", data: stage("a", "Node") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", wantErr: "object 2 is a v1 ConfigMap, not a kwok.x-k8s.io/v1alpha1 Stage"},
		{name: "no resourceRef", data: "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: x\n", wantErr: `object 1 (Stage "x") has no spec.resourceRef.kind`},
		// YAML keeps the last of duplicate keys, so the Node stage is lost.
		{name: "two documents without a separator", data: stage("a", "Node") + stage("b", "Pod"), wantErr: "no Stage for Nodes"},
		{name: "no kind", data: "metadata:\n  name: x\n", wantErr: "document 1 has no apiVersion or kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkStages([]byte(tt.data))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkStages: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkStages error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestBuiltStages checks the stages `make kwok` writes, when they have been built.
func TestBuiltStages(t *testing.T) {
	path := filepath.Join("..", "..", "..", "bin", "kwok-stages.yaml")
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not built: `make kwok` writes it", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := checkStages(data); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

// kwokConfigYAML is a minimal kwok configuration object of kind.
func kwokConfigYAML(kind, path string) string {
	doc := fmt.Sprintf("apiVersion: kwok.x-k8s.io/v1alpha1\nkind: %s\nmetadata:\n  name: x\n", kind)
	if path != "" {
		doc += fmt.Sprintf("spec:\n  path: %q\n", path)
	}
	return doc
}

func TestCheckKwokMetrics(t *testing.T) {
	const path = "/metrics/nodes/{nodeName}/metrics/resource"
	usage, metric := kwokConfigYAML("ClusterResourceUsage", ""), kwokConfigYAML("Metric", path)
	tests := []struct {
		name    string
		data    string
		wantErr string
	}{
		{name: "usage and metric", data: usage + "---\n" + metric},
		{name: "per-pod usage", data: kwokConfigYAML("ResourceUsage", "") + "---\n" + metric},
		{name: "no usage", data: metric, wantErr: "no ClusterResourceUsage or ResourceUsage"},
		{name: "no metric", data: usage, wantErr: "no Metric with path " + path},
		{name: "metric at another path", data: usage + "---\n" + kwokConfigYAML("Metric", "/metrics/resource"), wantErr: "no Metric with path"},
		{name: "a stage", data: usage + "---\n" + metric + "---\n" + stageYAML("a", "Pod"), wantErr: "object 3 is a Stage"},
		{name: "not kwok", data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", wantErr: "object 1 is a v1 ConfigMap, not kwok.x-k8s.io/v1alpha1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkKwokMetrics([]byte(tt.data))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkKwokMetrics: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkKwokMetrics error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestBuiltKwokMetrics checks the configuration `make kwok` writes, when it has been built.
func TestBuiltKwokMetrics(t *testing.T) {
	path := filepath.Join("..", "..", "..", "bin", "kwok-metrics.yaml")
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not built: `make kwok` writes it", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := checkKwokMetrics(data); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name            string
		stat            string
		pid, ppid, pgid int
		wantErr         bool
	}{
		{name: "plain", stat: "4242 (etcd) S 100 4242 4242 0 -1 4194560", pid: 4242, ppid: 100, pgid: 4242},
		{name: "spaces and parentheses in comm", stat: "77 (a (b) c) R 1 70 70 0", pid: 77, ppid: 1, pgid: 70},
		{name: "truncated", stat: "77 (sh) R 1", wantErr: true},
		{name: "no comm", stat: "77 sh R 1 2 3", wantErr: true},
		{name: "bad pid", stat: "x (sh) R 1 2 3", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, ppid, pgid, err := parseStat([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStat(%q) error %v, want error %v", tt.stat, err, tt.wantErr)
			}
			if err == nil && (pid != tt.pid || ppid != tt.ppid || pgid != tt.pgid) {
				t.Errorf("parseStat(%q) = %d, %d, %d; want %d, %d, %d", tt.stat, pid, ppid, pgid, tt.pid, tt.ppid, tt.pgid)
			}
		})
	}
}

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string
	}{
		{name: "arguments", data: "/bin/k8s/kube-apiserver\x00--secure-port=6443\x00--cert-dir=/tmp/a b\x00", want: []string{"/bin/k8s/kube-apiserver", "--secure-port=6443", "--cert-dir=/tmp/a b"}},
		{name: "no arguments", data: "/bin/etcd\x00", want: []string{"/bin/etcd"}},
		{name: "empty argument kept", data: "sh\x00-c\x00\x00x\x00", want: []string{"sh", "-c", "", "x"}},
		{name: "no trailing NUL", data: "sh\x00-c", want: []string{"sh", "-c"}},
		{name: "zombie", data: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseCmdline([]byte(tt.data))); diff != "" {
				t.Errorf("parseCmdline(%q) (-want +got):\n%s", tt.data, diff)
			}
		})
	}
}

func TestRuns(t *testing.T) {
	const path, arg = "/bin/k8s/kube-apiserver", "--cert-dir=/tmp/a/apiserver"
	tests := []struct {
		name string
		argv []string
		want bool
	}{
		{name: "path and argument", argv: []string{path, "--secure-port=1", arg}, want: true},
		{name: "another cluster's", argv: []string{path, "--cert-dir=/tmp/b/apiserver"}},
		{name: "argument as argv[0]", argv: []string{arg, path}},
		{name: "another binary", argv: []string{"/bin/k8s/etcd", arg}},
		{name: "a prefix of the argument", argv: []string{path, arg + "2"}},
		{name: "zombie", argv: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runs(tt.argv, path, arg); got != tt.want {
				t.Errorf("runs(%q) = %v, want %v", tt.argv, got, tt.want)
			}
		})
	}
}

// TestAPIServerMinor reads the minor version from what kube-apiserver --version prints, and
// refuses what is not a version.
func TestAPIServerMinor(t *testing.T) {
	for _, tc := range []struct {
		said string
		want int
		ok   bool
	}{{"Kubernetes v1.37.2", 37, true}, {"Kubernetes v1.35.4-dirty", 35, true}, {"hello", 0, false}} {
		path := filepath.Join(t.TempDir(), "kube-apiserver")
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho '"+tc.said+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := apiServerMinor(path)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: minor %d, error %v; want %d, ok %t", tc.said, got, err, tc.want, tc.ok)
		}
	}
}
