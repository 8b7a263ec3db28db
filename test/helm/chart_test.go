// Package helm_test keeps the Helm chart (charts/switchboard) one with the kustomize manifests
// (config/): it renders the chart with the Helm SDK, as `helm install` does, and requires the
// objects of the kustomize build it stands for, apart from Helm's labels; it checks that the
// schema refuses bad values naming the field, that nothing runs as root, that the manager accepts
// every flag the chart gives it, and that Helm's lint passes. A Go module of its own, so that
// the manager's go.mod does not carry the Helm SDK.
package helm_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/manifests"
	"github.com/example/switchboard/internal/testenv"
	helmsdk "github.com/example/switchboard/test/helm/internal/render"
)

// Where the chart and the kustomizations are, from this package's directory.
var (
	chartDir  = filepath.Join("..", "..", "charts", "switchboard")
	configDir = filepath.Join("..", "..", "config")
)

// The release the tests install: named so that the chart's object names are the manifests'.
const (
	releaseName = "switchboard"
	namespace   = "switchboard-system"
)

// loadChart loads the chart from its directory.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := helmsdk.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// install renders the chart as `helm install switchboard charts/switchboard --namespace
// switchboard-system --dry-run` does, values and schema checks included, and returns the
// objects, or Helm's error.
func install(t *testing.T, values string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return installRelease(t, releaseName, namespace, values)
}

// installRelease is install for the release name in namespace ns.
func installRelease(t *testing.T, name, ns, values string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	manifest, err := releaseManifest(t, name, ns, values)
	if err != nil {
		return nil, err
	}
	objs, err := manifests.Decode([]byte(manifest))
	if err != nil {
		t.Fatalf("decoding the chart's manifests: %v", err)
	}
	return objs, nil
}

// releaseManifest is the manifest `helm install` applies for the release name in ns with
// these values, as installRelease renders it.
func releaseManifest(t *testing.T, name, ns, values string) (string, error) {
	t.Helper()
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatalf("the test's values: %v", err)
	}
	return helmsdk.Install(loadChart(t), name, ns, vals)
}

// render is install for values the chart must accept.
func render(t *testing.T, values string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := install(t, values)
	if err != nil {
		t.Fatalf("installing the chart with\n%s\n: %v", values, err)
	}
	return objs
}

// valuesFile reads a values file of the chart.
func valuesFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// kustomization is what a kustomize build renders: an existing directory of config/, or one the
// test writes with these resources and components (directories of config/).
type kustomization struct {
	dir                   string
	resources, components []string
}

// build renders the kustomization with `kubectl kustomize`.
func (k kustomization) build(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found: the chart is compared with `kubectl kustomize` of config/")
	}
	dir := filepath.Join(configDir, k.dir)
	if k.dir == "" {
		dir = t.TempDir()
		config, err := filepath.Abs(configDir)
		if err != nil {
			t.Fatal(err)
		}
		// kustomize refuses absolute paths: each is relative to the new directory.
		rel := func(names []string) string {
			var lines []string
			for _, name := range names {
				path, err := filepath.Rel(dir, filepath.Join(config, name))
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, "- "+path)
			}
			return strings.Join(lines, "\n")
		}
		text := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + namespace +
			"\nresources:\n" + rel(k.resources) + "\ncomponents:\n" + rel(k.components) + "\n"
		if len(k.components) == 0 {
			text = strings.TrimSuffix(text, "components:\n\n")
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := manifests.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// equivalences are the chart's values that stand for each kustomize build.
var equivalences = []struct {
	name, values string
	kustomize    kustomization
}{
	{"default", "", kustomization{dir: "default"}},
	{"ha", "ci/ha-values.yaml", kustomization{dir: "overlays/ha"}},
	{"dynamic shards", "ci/dynamic-shards-values.yaml", kustomization{dir: "overlays/dynamic-shards"}},
	{"namespaced", "ci/namespaced-values.yaml", kustomization{dir: "overlays/namespaced"}},
	{"configmapwatcher", "ci/configmapwatcher-values.yaml", kustomization{dir: "overlays/configmapwatcher"}},
	{"sharded", "ci/sharded-values.yaml", kustomization{dir: "overlays/sharded"}},
	{"myapp alone", "controllers: {verticalscaler: {enabled: false}, configmapwatcher: {enabled: false}}",
		kustomization{resources: []string{"manager", "rbac"}, components: []string{"components/myapp"}}},
	{"verticalscaler alone", "ci/verticalscaler-values.yaml",
		kustomization{resources: []string{"manager", "rbac"}, components: []string{"components/verticalscaler"}}},
	{"ServiceMonitor and NetworkPolicy", "metrics: {serviceMonitor: {enabled: true}}\nnetworkPolicy: {enabled: true}",
		kustomization{resources: []string{"default", "prometheus", "network-policy"}}},
	{"monitored", "ci/monitored-values.yaml", kustomization{dir: "overlays/monitored"}},
	{"cert-manager without a ServiceMonitor", "metrics: {certificate: {certManager: {enabled: true}}}",
		kustomization{resources: []string{"default"}, components: []string{"certmanager"}}},
	{"a CA to trust", "trustedCA: {configMapName: switchboard-trusted-ca}",
		kustomization{resources: []string{"default"}, components: []string{"trusted-ca"}}},
}

// values returns a case's values: a file of the chart's, or YAML.
func caseValues(t *testing.T, values string) string {
	if strings.HasSuffix(values, ".yaml") {
		return valuesFile(t, values)
	}
	return values
}

// TestChartIsTheKustomizeBuild renders the chart with the values that stand for each kustomize
// build and requires the same objects, apart from Helm's labels and annotations and the
// Namespace, which `helm install --create-namespace` creates.
func TestChartIsTheKustomizeBuild(t *testing.T) {
	for _, tc := range equivalences {
		t.Run(tc.name, func(t *testing.T) {
			checkIsTheKustomizeBuild(t, render(t, caseValues(t, tc.values)), tc.kustomize)
		})
	}
	// Rendered for a cluster without MutatingAdmissionPolicy v1, as `helm template
	// --kube-version 1.34` does, the chart is the installer for Kubernetes before 1.36.
	t.Run("Kubernetes 1.34", func(t *testing.T) {
		checkIsTheKustomizeBuild(t, renderFor(t, "", helmsdk.Cluster{KubeVersion: kubeVersion(34)}), kustomization{dir: "overlays/before-1.36"})
	})
}

// checkIsTheKustomizeBuild compares the chart's rendered objects with the kustomize build k.
func checkIsTheKustomizeBuild(t *testing.T, rendered []*unstructured.Unstructured, k kustomization) {
	t.Helper()
	want := map[string]map[string]any{}
	for _, obj := range k.build(t) {
		switch obj.GetKind() {
		case "Namespace":
			continue
		case "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
			// kustomize 5.5 does not know these kinds are cluster-scoped and gives them
			// the kustomization's namespace, which the API server drops.
			obj.SetNamespace("")
		}
		want[key(obj)] = normalize(t, obj)
	}
	got := map[string]map[string]any{}
	for _, obj := range rendered {
		if obj.GetKind() == "Namespace" {
			t.Errorf("the chart renders the Namespace %s: Helm installs into a namespace that exists", obj.GetName())
		}
		if _, dup := got[key(obj)]; dup {
			t.Errorf("the chart renders %s twice", key(obj))
		}
		got[key(obj)] = normalize(t, obj)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart against the kustomize build (-kustomize +chart):\n%s", diff)
	}
}

// key names an object: kind, namespace, name.
func key(obj *unstructured.Unstructured) string {
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// helmLabels are the labels Helm charts give every object (those of `helm create`), and
// kustomize's counterpart, app.kubernetes.io/managed-by.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// normalize returns the object without Helm's labels (and kustomize's managed-by), without
// app.kubernetes.io/instance in the selectors, where the chart tells its releases apart, without
// Helm's annotations (helm.sh/resource-policy), and with the manager's --controllers as the
// sorted controllers it selects: kustomize names the last component twice.
func normalize(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	out := obj.DeepCopy().Object
	strip(out, "")
	if obj.GetKind() != "Deployment" {
		return out
	}
	containers, _, _ := unstructured.NestedSlice(out, "spec", "template", "spec", "containers")
	for _, c := range containers {
		c := c.(map[string]any)
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		for i := range args {
			if args[i] == "--controllers" && i+1 < len(args) {
				args[i+1] = strings.Join(selected(t, args[i+1]), ",")
			}
		}
		if err := unstructured.SetNestedStringSlice(c, args, "args"); err != nil {
			t.Fatal(err)
		}
	}
	if err := unstructured.SetNestedSlice(out, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	return out
}

// strip removes Helm's labels and annotations from every metadata of v, and the instance label
// from every map.
func strip(v any, key string) {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "app.kubernetes.io/instance")
		if key == "metadata" {
			if labels, ok := v["labels"].(map[string]any); ok {
				for _, l := range helmLabels {
					delete(labels, l)
				}
				if len(labels) == 0 {
					delete(v, "labels")
				}
			}
			if annotations, ok := v["annotations"].(map[string]any); ok {
				for a := range annotations {
					if strings.HasPrefix(a, "helm.sh/") {
						delete(annotations, a)
					}
				}
				if len(annotations) == 0 {
					delete(v, "annotations")
				}
			}
		}
		for k, child := range v {
			strip(child, k)
		}
	case []any:
		for _, child := range v {
			strip(child, "")
		}
	}
}

// selected returns the controllers --controllers=value runs, as the manager resolves it, sorted.
func selected(t *testing.T, value string) []string {
	t.Helper()
	sel, err := controllers.Select(controllers.Table(), strings.Split(value, ","))
	if err != nil {
		t.Fatalf("the manager refuses --controllers %q: %v", value, err)
	}
	var names []string
	for _, c := range sel {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// managerDeployment returns the manager's Deployment among objs.
func managerDeployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("the chart renders no Deployment")
	return nil
}

// configMapWatcherOptions returns the configmapwatcher's options, which its rows share, as the
// manager parsed them into sel.
func configMapWatcherOptions(t *testing.T, sel controllers.Selection) *configmapwatcher.Options {
	t.Helper()
	for _, c := range sel.Controllers {
		if o, ok := c.Flags.(*configmapwatcher.Options); ok {
			return o
		}
	}
	t.Fatal("no configmapwatcher controller is selected")
	return nil
}

// TestEveryValueReachesTheManager sets every value that becomes a flag and checks, with the
// manager's own flag parsing, that each arrives as meant.
func TestEveryValueReachesTheManager(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	objs := render(t, `
image: {repository: registry.example.com/switchboard, tag: v9.9.9, digest: `+digest+`, pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
controllers:
  configmapwatcher:
    kinds: {cronjobs: false, daemonsets: false, jobs: false}
    reloaderAnnotations: false
    reloadDebounce: 50ms
    autoReloadAll: true
    namespaceSelector: "team:*, environment in (prod, staging)"
    namespacesToIgnore: [kube-system, monitoring]
    resourceLabelSelector: "reload=true"
    resourcesToIgnore: secrets
    reloadOnDelete: true
    webhookUrl: "https://hooks.example.com/services/T0/B0/x?y=1#z"
    webhookFormat: slack
    webhookOnly: true
    maxRolloutsPerMinute: 1000000
replicaCount: 2
leaderElection: {scope: controller, leaseDuration: 20s, renewDeadline: 15s, retryPeriod: 3s}
watchNamespaces: [team-a, team-b]
metrics: {enabled: false}
logLevel: debug
extraArgs: [--kube-api-qps=50, --kube-api-burst=80]
priorityClassName: system-cluster-critical
nodeSelector: {kubernetes.io/os: linux}
`)
	d := managerDeployment(t, objs)
	opts, sel := testenv.ManagerOptions(t, d.Spec.Template.Spec.Containers[0].Args)
	var names []string
	for _, c := range sel.Controllers {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"myapp", "verticalscaler", "verticalpodautoscaler", "configmapwatcher-deployments", "configmapwatcher-statefulsets", "configmapwatcher-rollouts"}, names); diff != "" {
		t.Errorf("controllers (-want +got):\n%s", diff)
	}
	cmw := configMapWatcherOptions(t, sel)
	gotCMW := map[string]any{
		"reloader-annotations": cmw.ReloaderAnnotations, "debounce": cmw.ReloadDebounce, "auto-reload-all": cmw.AutoReloadAll,
		"namespace-selector": cmw.NamespaceSelector, "namespaces-to-ignore": cmw.NamespacesToIgnore,
		"resource-label-selector": cmw.ResourceLabelSelector, "resources-to-ignore": cmw.ResourcesToIgnore,
		"reload-on-delete": cmw.ReloadOnDelete, "webhook-url": cmw.WebhookURL, "webhook-format": cmw.WebhookFormat,
		"notify-url": cmw.NotifyURL, "max-rollouts-per-minute": cmw.MaxRolloutsPerMinute,
	}
	wantCMW := map[string]any{
		"reloader-annotations": false, "debounce": 50 * time.Millisecond, "auto-reload-all": true,
		"namespace-selector": "team:*, environment in (prod, staging)", "namespaces-to-ignore": []string{"kube-system", "monitoring"},
		"resource-label-selector": "reload=true", "resources-to-ignore": []string{"secrets"},
		"reload-on-delete": true, "webhook-url": "https://hooks.example.com/services/T0/B0/x?y=1#z", "webhook-format": "slack",
		"notify-url": "", "max-rollouts-per-minute": 1000000,
	}
	if diff := cmp.Diff(wantCMW, gotCMW); diff != "" {
		t.Errorf("the configmapwatcher's options (-want +got):\n%s", diff)
	}
	got := map[string]any{
		"leader-elect": opts.LeaderElect, "scope": opts.LeaderElectScope, "lease": opts.LeaseDuration, "renew": opts.RenewDeadline,
		"retry": opts.RetryPeriod, "namespaces": opts.WatchNamespaces, "metrics": opts.MetricsBindAddress, "qps": opts.KubeAPIQPS,
		"burst": opts.KubeAPIBurst,
	}
	want := map[string]any{
		"leader-elect": true, "scope": "controller", "lease": 20 * time.Second, "renew": 15 * time.Second, "retry": 3 * time.Second,
		"namespaces": "team-a,team-b", "metrics": "0", "qps": 50.0, "burst": 80,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the manager's options (-want +got):\n%s", diff)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--zap-log-level=debug") {
		t.Errorf("args %q lack --zap-log-level=debug", c.Args)
	}
	if want := "registry.example.com/switchboard:v9.9.9@" + digest; c.Image != want || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %s, pull policy %s; want %s, Always", c.Image, c.ImagePullPolicy, want)
	}
	spec := d.Spec.Template.Spec
	if len(spec.ImagePullSecrets) != 1 || spec.PriorityClassName != "system-cluster-critical" || spec.NodeSelector["kubernetes.io/os"] != "linux" || *d.Spec.Replicas != 2 {
		t.Errorf("pull secrets %v, priority class %q, node selector %v, replicas %d", spec.ImagePullSecrets, spec.PriorityClassName, spec.NodeSelector, *d.Spec.Replicas)
	}
	for _, obj := range objs {
		if obj.GetKind() == "Service" || obj.GetKind() == "ClusterRoleBinding" && strings.HasPrefix(obj.GetName(), "switchboard-myapp") {
			t.Errorf("%s: metrics off needs no Service, watched namespaces no ClusterRoleBinding", key(obj))
		}
	}
}

// TestWebhookURLFromSecret: with webhookUrlSecret, the container takes the URL from the
// Secret's key into a variable that the flag names, so that no object the chart renders holds
// it; with the args expanded as the kubelet expands them, the manager posts there: with
// webhookOnly instead of rolling (--webhook-url), without it besides (--notify-url).
func TestWebhookURLFromSecret(t *testing.T) {
	const url = "https://hooks.example.com/services/T0/B0/token"
	for _, only := range []bool{true, false} {
		d := managerDeployment(t, render(t, fmt.Sprintf("controllers: {configmapwatcher: {webhookUrlSecret: {name: chat-webhook, key: webhook}, webhookOnly: %v}}", only)))
		c := d.Spec.Template.Spec.Containers[0]
		args := expandSecretVariables(t, c, map[string]map[string]string{"chat-webhook": {"webhook": url}})
		if slices.Equal(args, c.Args) {
			t.Fatalf("args %q name no variable from the Secret", c.Args)
		}
		_, sel := testenv.ManagerOptions(t, args)
		o := configMapWatcherOptions(t, sel)
		want := [2]string{"", url}
		if only {
			want = [2]string{url, ""}
		}
		if got := [2]string{o.WebhookURL, o.NotifyURL}; got != want {
			t.Errorf("webhookOnly %v: the manager's --webhook-url, --notify-url are %q; want %q", only, got, want)
		}
	}
}

// expandSecretVariables returns c's args with each $(NAME) of a variable that c takes from a
// Secret's key replaced by that key's value in secrets (Secret name -> key -> value), as the
// kubelet expands them.
func expandSecretVariables(t *testing.T, c corev1.Container, secrets map[string]map[string]string) []string {
	t.Helper()
	var pairs []string
	for _, env := range c.Env {
		if env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := env.ValueFrom.SecretKeyRef
		value, ok := secrets[ref.Name][ref.Key]
		if !ok {
			t.Fatalf("variable %s: the test has no key %s in a Secret %s", env.Name, ref.Key, ref.Name)
		}
		pairs = append(pairs, "$("+env.Name+")", value)
	}
	r := strings.NewReplacer(pairs...)
	args := make([]string, len(c.Args))
	for i, arg := range c.Args {
		args[i] = r.Replace(arg)
	}
	return args
}

// TestNamespaceSelectorReadsNamespaces: the manager lists and watches Namespaces for
// --namespace-selector. Cluster-wide, the configmapwatcher's ClusterRole lets it; with
// watchNamespaces, whose Roles cannot, a ClusterRole of its own does, and only then.
func TestNamespaceSelectorReadsNamespaces(t *testing.T) {
	for _, tc := range []struct {
		values string
		want   []string
	}{
		{"controllers: {configmapwatcher: {namespaceSelector: team=a}}", []string{"switchboard-configmapwatcher"}},
		{"controllers: {configmapwatcher: {namespaceSelector: team=a}}\nwatchNamespaces: [a, b]", []string{"switchboard-configmapwatcher-namespaces"}},
		{"watchNamespaces: [a, b]", nil},
		{"controllers: {configmapwatcher: {namespaceSelector: team=a}}\nwatchNamespaces: [a]\nrbac: {create: false}", nil},
	} {
		bound := map[string]bool{}
		var readers []string
		objs := render(t, tc.values)
		for _, obj := range objs {
			if obj.GetKind() == "ClusterRoleBinding" {
				b := &rbacv1.ClusterRoleBinding{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, b); err != nil {
					t.Fatal(err)
				}
				if len(b.Subjects) == 1 && b.Subjects[0].Name == "switchboard-controller-manager" && b.Subjects[0].Namespace == namespace {
					bound[b.RoleRef.Name] = true
				}
			}
		}
		for _, obj := range objs {
			if obj.GetKind() != "ClusterRole" || !bound[obj.GetName()] {
				continue
			}
			role := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role); err != nil {
				t.Fatal(err)
			}
			for _, rule := range role.Rules {
				if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "namespaces") &&
					slices.Contains(rule.Verbs, "list") && slices.Contains(rule.Verbs, "watch") {
					readers = append(readers, role.Name)
				}
			}
		}
		if diff := cmp.Diff(tc.want, readers); diff != "" {
			t.Errorf("values %q: ClusterRoles bound to the manager that list and watch Namespaces (-want +got):\n%s", tc.values, diff)
		}
	}
}

// TestSchemaRefusesBadValues installs the chart with values it must refuse, and requires
// Helm's error to name the field.
func TestSchemaRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"an unknown controller", "controllers: {foo: {enabled: true}}", "at '/controllers': additional properties 'foo' not allowed"},
		{"scope foo", "leaderElection: {scope: foo}", "at '/leaderElection/scope'"},
		{"an unknown value", "replicas: 3", "additional properties 'replicas' not allowed"},
		{"a bad digest", "image: {digest: latest}", "at '/image/digest'"},
		{"a bad namespace", "watchNamespaces: [Team_A]", "at '/watchNamespaces/0'"},
		{"a bad debounce", "controllers: {configmapwatcher: {reloadDebounce: soon}}", "at '/controllers/configmapwatcher/reloadDebounce'"},
		{"a bad log level", "logLevel: verbose", "at '/logLevel'"},
		{"both kinds of source ignored", "controllers: {configmapwatcher: {resourcesToIgnore: 'configmaps,secrets'}}", "at '/controllers/configmapwatcher/resourcesToIgnore'"},
		{"a bad namespace to ignore", "controllers: {configmapwatcher: {namespacesToIgnore: [Kube_System]}}", "at '/controllers/configmapwatcher/namespacesToIgnore/0'"},
		{"a namespace to ignore twice", "controllers: {configmapwatcher: {namespacesToIgnore: [a, a]}}", "at '/controllers/configmapwatcher/namespacesToIgnore'"},
		{"a webhook URL without a scheme", "controllers: {configmapwatcher: {webhookUrl: hooks.example.com/x}}", "at '/controllers/configmapwatcher/webhookUrl'"},
		{"a webhook URL without a host", "controllers: {configmapwatcher: {webhookUrl: 'https:///x'}}", "at '/controllers/configmapwatcher/webhookUrl'"},
		{"a bad webhook Secret", "controllers: {configmapwatcher: {webhookUrlSecret: {name: Chat_Hook}}}", "at '/controllers/configmapwatcher/webhookUrlSecret/name'"},
		{"a bad webhook format", "controllers: {configmapwatcher: {webhookFormat: xml}}", "at '/controllers/configmapwatcher/webhookFormat'"},
		{"a negative limit of rolls", "controllers: {configmapwatcher: {maxRolloutsPerMinute: -1}}", "at '/controllers/configmapwatcher/maxRolloutsPerMinute'"},
		{"a fractional limit of rolls", "controllers: {configmapwatcher: {maxRolloutsPerMinute: 1.5}}", "at '/controllers/configmapwatcher/maxRolloutsPerMinute'"},
		{"a selector that is no string", "controllers: {configmapwatcher: {namespaceSelector: {team: a}}}", "at '/controllers/configmapwatcher/namespaceSelector'"},
		{"a shard named rest", "sharding: {shards: [shard1, rest]}", "at '/sharding/shards/1'"},
		{"a shard twice", "sharding: {shards: [shard1, shard1]}", "at '/sharding/shards'"},
		{"a shard name that is no label value", "sharding: {shards: [Shard_1]}", "at '/sharding/shards/0'"},
		{"a bad flag", "extraArgs: [verbose]", "at '/extraArgs/0'"},
		{"the probes' port for metrics", "metrics: {port: 8081}", "at '/metrics/port'"},
		{"root", "securityContext: {runAsUser: 0}", "at '/securityContext/runAsUser'"},
		{"root allowed", "securityContext: {runAsNonRoot: false}", "at '/securityContext/runAsNonRoot'"},
		{"root allowed in the Pod", "podSecurityContext: {runAsNonRoot: false}", "at '/podSecurityContext/runAsNonRoot'"},
		{"a writable root filesystem", "securityContext: {readOnlyRootFilesystem: false}", "at '/securityContext/readOnlyRootFilesystem'"},
		{"privilege escalation", "securityContext: {allowPrivilegeEscalation: true}", "at '/securityContext/allowPrivilegeEscalation'"},
		{"privileged", "securityContext: {privileged: true}", "at '/securityContext/privileged'"},
		{"capabilities kept", "securityContext: {capabilities: {drop: [NET_RAW]}}", "at '/securityContext/capabilities/drop'"},
		{"capabilities added", "securityContext: {capabilities: {add: [SYS_ADMIN]}}", "at '/securityContext/capabilities/add/0'"},
		{"a bad certificate Secret", "metrics: {certificate: {secretName: Metrics_Cert}}", "at '/metrics/certificate/secretName'"},
		{"a bad dashboard namespace", "grafana: {dashboard: {enabled: true, namespace: Monitoring}}", "at '/grafana/dashboard/namespace'"},
		{"a variable without a name", "extraEnv: [{value: x}]", "at '/extraEnv/0'"},
		{"a variable's name with =", "extraEnv: [{name: 'A=B', value: x}]", "at '/extraEnv/0/name'"},
		{"a variable's unknown field", "extraEnv: [{name: A, default: x}]", "at '/extraEnv/0'"},
		{"a volume without a name", "extraVolumes: [{emptyDir: {}}]", "at '/extraVolumes/0'"},
		{"a volume mount without a path", "extraVolumeMounts: [{name: tmp}]", "at '/extraVolumeMounts/0'"},
		{"a relative mount path", "extraVolumeMounts: [{name: tmp, mountPath: tmp}]", "at '/extraVolumeMounts/0/mountPath'"},
		{"a bad trusted CA ConfigMap", "trustedCA: {configMapName: Corp_CA}", "at '/trustedCA/configMapName'"},
		{"a bad trusted CA key", "trustedCA: {secretName: corp-ca, key: 'a/b'}", "at '/trustedCA/key'"},
		{"a trusted CA file", "trustedCA: {file: /etc/ca.pem}", "additional properties 'file' not allowed"},
		// What the schema cannot say, the templates refuse, naming the values.
		{"every controller off", "controllers: {myapp: {enabled: false}, verticalscaler: {enabled: false}, configmapwatcher: {enabled: false}}", "controllers: every controller is off"},
		{"every kind off", "controllers: {configmapwatcher: {kinds: {deployments: false, statefulsets: false, daemonsets: false, cronjobs: false, jobs: false, rollouts: false}}}", "controllers.configmapwatcher.kinds: every kind is off"},
		{"two webhook URLs", "controllers: {configmapwatcher: {webhookUrl: 'https://hooks.example.com/x', webhookUrlSecret: {name: hook}}}", "controllers.configmapwatcher: webhookUrl and webhookUrlSecret.name are both set"},
		{"webhookOnly without a webhook", "controllers: {configmapwatcher: {webhookOnly: true}}", "controllers.configmapwatcher.webhookOnly needs webhookUrl or webhookUrlSecret.name"},
		{"replicas without leader election", "replicaCount: 3\nleaderElection: {enabled: false}", "replicaCount > 1 needs leaderElection.enabled"},
		{"dynamic shards with leader election", "sharding: {dynamic: true}", "sharding.dynamic and leaderElection.enabled contradict"},
		{"dynamic and label shards", "sharding: {dynamic: true, shards: [shard1]}\nleaderElection: {enabled: false}", "sharding.dynamic and sharding.shards contradict"},
		{"dynamic shards that are no boolean", "sharding: {dynamic: yes please}", "at '/sharding/dynamic'"},
		{"a Lease per controller without leader election", "leaderElection: {enabled: false, scope: controller}", "leaderElection.scope=controller needs leaderElection.enabled"},
		{"two certificates", "metrics: {certificate: {certManager: {enabled: true}, secretName: mine}}", "metrics.certificate: certManager.enabled and secretName are both set"},
		{"two trusted CAs", "trustedCA: {configMapName: corp-ca, secretName: corp-ca}", "trustedCA: configMapName and secretName are both set"},
		{"a variable the chart sets", "extraEnv: [{name: POD_NAMESPACE, value: x}]", "extraEnv: POD_NAMESPACE is set twice"},
		{"SSL_CERT_DIR beside trustedCA", "trustedCA: {configMapName: corp-ca}\nextraEnv: [{name: SSL_CERT_DIR, value: /x}]", "extraEnv: SSL_CERT_DIR is set twice"},
		{"a variable of Reloader's values", "reloader: {deployment: {env: {open: {ALERT_SINK: slack}}}}\nextraEnv: [{name: ALERT_SINK, value: raw}]", "extraEnv: ALERT_SINK is set twice"},
		{"a variable twice", "extraEnv: [{name: A, value: one}, {name: A, value: two}]", "extraEnv: A is set twice"},
		{"a volume name of the chart's", "extraVolumes: [{name: trusted-ca, emptyDir: {}}]", "extraVolumes: the volume name trusted-ca is used twice"},
		{"a volume of Reloader's values", "reloader: {deployment: {volumes: [{name: tmp, emptyDir: {}}]}}\nextraVolumes: [{name: tmp, emptyDir: {}}]", "extraVolumes: the volume name tmp is used twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := install(t, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("installing with %s: %v; want an error with %q", tc.values, err, tc.want)
			}
		})
	}
}

// TestShardsSplitTheObjects renders three label shards with two replicas each and checks that
// every object falls in exactly one manager's --watch-label-selector, that each manager elects
// through Leases of its own which the leader election Role names, and that each Deployment, its
// topology spread and its PodDisruptionBudget select its own Pods alone.
func TestShardsSplitTheObjects(t *testing.T) {
	objs := render(t, `
sharding: {key: example.com/shard, shards: [a, b, c]}
replicaCount: 2
podDisruptionBudget: {enabled: true}
topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}]
`)
	var deployments []*appsv1.Deployment
	var pdbs []*policyv1.PodDisruptionBudget
	var leases []string
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "Deployment":
			deployments = append(deployments, managerDeployment(t, []*unstructured.Unstructured{obj}))
		case obj.GetKind() == "PodDisruptionBudget":
			pdb := &policyv1.PodDisruptionBudget{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pdb); err != nil {
				t.Fatal(err)
			}
			pdbs = append(pdbs, pdb)
		case obj.GetKind() == "Role" && strings.HasSuffix(obj.GetName(), "-leader-election"):
			role := &rbacv1.Role{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role); err != nil {
				t.Fatal(err)
			}
			for _, rule := range role.Rules {
				leases = append(leases, rule.ResourceNames...)
			}
		}
	}
	if len(deployments) != 4 || len(pdbs) != 4 {
		t.Fatalf("%d Deployments and %d PodDisruptionBudgets, want four each: shards a, b, c and the rest", len(deployments), len(pdbs))
	}
	var selectors []labels.Selector
	var want []string
	for _, d := range deployments {
		opts, sel := testenv.ManagerOptions(t, d.Spec.Template.Spec.Containers[0].Args)
		selector, err := labels.Parse(opts.WatchLabelSelector)
		if err != nil || opts.WatchLabelSelector == "" {
			t.Fatalf("Deployment %s: --watch-label-selector %q: %v", d.Name, opts.WatchLabelSelector, err)
		}
		selectors = append(selectors, selector)
		want = append(want, controllers.LeaseNames(sel.Controllers, opts.LeaderElectResourceName)...)
		pods := labels.Set(d.Spec.Template.Labels)
		for _, other := range deployments {
			if other.Name != d.Name && labels.SelectorFromSet(other.Spec.Selector.MatchLabels).Matches(pods) {
				t.Errorf("Deployment %s selects the Pods of %s", other.Name, d.Name)
			}
		}
		for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
			if !cmp.Equal(c.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
				t.Errorf("Deployment %s spreads %v, not its own Pods %v", d.Name, c.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels)
			}
		}
		mine := 0
		for _, pdb := range pdbs {
			if labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(pods) {
				mine++
			}
		}
		if mine != 1 {
			t.Errorf("the Pods of %s are counted by %d PodDisruptionBudgets, want one", d.Name, mine)
		}
	}
	testenv.OneShardEach(t, selectors, labels.Set{}, labels.Set{"team": "blue"}, labels.Set{"example.com/shard": "a"}, labels.Set{"example.com/shard": "c"},
		labels.Set{"example.com/shard": "d"}, labels.Set{"sharding.fluxcd.io/key": "a"})
	sort.Strings(want)
	sort.Strings(leases)
	if diff := cmp.Diff(want, leases); diff != "" {
		t.Errorf("Leases the Role names (-the managers' +named):\n%s", diff)
	}
}

// TestNothingRunsAsRoot checks every Pod the chart renders, with each case's values: not root,
// no privilege escalation, a read-only root filesystem, every capability dropped, seccomp.
func TestNothingRunsAsRoot(t *testing.T) {
	for _, tc := range equivalences {
		t.Run(tc.name, func(t *testing.T) {
			for _, obj := range render(t, caseValues(t, tc.values)) {
				if obj.GetKind() != "Deployment" {
					continue
				}
				d := managerDeployment(t, []*unstructured.Unstructured{obj})
				psc := d.Spec.Template.Spec.SecurityContext
				if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("Pod security context %+v: want runAsNonRoot, seccomp RuntimeDefault", psc)
				}
				for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
					sc := c.SecurityContext
					if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
						sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
						sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
						t.Errorf("container %s security context %+v: want non-root, read-only root filesystem, no privilege escalation, drop ALL", c.Name, sc)
					}
				}
			}
		})
	}
}

// TestMetricsCertificateSecret: with a Secret of one's own, the manager serves its certificate
// and the ServiceMonitor verifies it with its ca.crt and the metrics Service's name, as with
// cert-manager's, and no cert-manager object is rendered.
func TestMetricsCertificateSecret(t *testing.T) {
	objs := render(t, "metrics: {certificate: {secretName: my-metrics-cert}, serviceMonitor: {enabled: true}}")
	var certManager []string
	for _, obj := range objs {
		if strings.HasPrefix(obj.GetAPIVersion(), "cert-manager.io/") {
			certManager = append(certManager, key(obj))
		}
		if obj.GetKind() == "ServiceMonitor" {
			endpoints, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
			tlsConfig := endpoints[0].(map[string]any)["tlsConfig"]
			want := map[string]any{"insecureSkipVerify": false, "serverName": "switchboard-controller-manager-metrics.switchboard-system.svc",
				"ca": map[string]any{"secret": map[string]any{"name": "my-metrics-cert", "key": "ca.crt"}}}
			if diff := cmp.Diff(want, tlsConfig); diff != "" {
				t.Errorf("ServiceMonitor tlsConfig (-want +got):\n%s", diff)
			}
		}
	}
	if len(certManager) > 0 {
		t.Errorf("cert-manager objects with a Secret of one's own: %v", certManager)
	}
	d := managerDeployment(t, objs)
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--metrics-cert-path=/var/run/secrets/switchboard/metrics-certs") ||
		len(d.Spec.Template.Spec.Volumes) != 1 || d.Spec.Template.Spec.Volumes[0].Secret == nil || d.Spec.Template.Spec.Volumes[0].Secret.SecretName != "my-metrics-cert" {
		t.Errorf("the manager does not serve the Secret my-metrics-cert: args %v, volumes %+v", d.Spec.Template.Spec.Containers[0].Args, d.Spec.Template.Spec.Volumes)
	}
}

// TestUserRolesFollowTheValues checks rbac.aggregateClusterRoles: the admin, editor and viewer
// roles of the kinds of the controllers on, aggregated to the built-in roles, and none when off.
func TestUserRolesFollowTheValues(t *testing.T) {
	for _, tc := range []struct {
		values string
		want   int
	}{
		{"", 9},
		{"controllers: {verticalscaler: {enabled: false}}", 3},
		{"rbac: {aggregateClusterRoles: false}", 0},
		{"rbac: {create: false}", 0},
	} {
		var got int
		for _, obj := range render(t, tc.values) {
			for label := range obj.GetLabels() {
				if obj.GetKind() == "ClusterRole" && strings.HasPrefix(label, "rbac.authorization.k8s.io/aggregate-to-") {
					got++
				}
			}
		}
		if got != tc.want {
			t.Errorf("values %q: %d aggregated ClusterRoles, want %d", tc.values, got, tc.want)
		}
	}
}

// TestCRDsFollowTheValues checks crds.install, crds.keep and crds.vpa: the CRDs of the
// controllers on, kept on uninstall by default, none when not installed, and the VPA's only
// when asked for, whatever crds.install says.
func TestCRDsFollowTheValues(t *testing.T) {
	const vpa, checkpoint = "verticalpodautoscalers.autoscaling.k8s.io", "verticalpodautoscalercheckpoints.autoscaling.k8s.io"
	ours := []string{"myapps.app.example.com", "verticalscalercheckpoints.app.example.com", "verticalscalers.app.example.com"}
	for _, tc := range []struct {
		values     string
		crds, kept []string
	}{
		{"", ours, ours},
		{"crds: {keep: false}", ours, nil},
		{"crds: {install: false}", nil, nil},
		{"crds: {vpa: true}", append([]string{checkpoint, vpa}, ours...), append([]string{checkpoint, vpa}, ours...)},
		{"crds: {install: false, keep: false, vpa: true}", []string{checkpoint, vpa}, nil},
	} {
		var crds, kept []string
		for _, obj := range render(t, tc.values) {
			if obj.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, obj.GetName())
				if obj.GetAnnotations()["helm.sh/resource-policy"] == "keep" {
					kept = append(kept, obj.GetName())
				}
			}
		}
		sortNames := cmpopts.SortSlices(func(a, b string) bool { return a < b })
		if diff := cmp.Diff(tc.crds, crds, sortNames, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("values %q: CRDs (-want +got):\n%s", tc.values, diff)
		}
		if diff := cmp.Diff(tc.kept, kept, sortNames, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("values %q: CRDs kept (-want +got):\n%s", tc.values, diff)
		}
	}
}

// TestChartCopiesAreCurrent checks that the chart's copies of what controller-gen generates for
// each component (its CRDs and RBAC, config/components/NAME), of its user roles, of the alerts
// and of the Grafana dashboard are the same files: `make manifests` writes both.
func TestChartCopiesAreCurrent(t *testing.T) {
	var want, got []string
	for dir, list := range map[string]*[]string{configDir: &want, filepath.Join(chartDir, "files"): &got} {
		for _, pattern := range []string{"components/*/crd/*.yaml", "components/*/rbac/*.yaml", "crd/vpa/*_*.yaml", "alerts/alerts.yaml", "grafana/switchboard.json"} {
			matches, err := filepath.Glob(filepath.Join(dir, pattern))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range matches {
				rel, err := filepath.Rel(dir, m)
				if err != nil {
					t.Fatal(err)
				}
				*list = append(*list, rel)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the chart's files/ against config/ (-config +chart): run `make manifests`\n%s", diff)
	}
	for _, rel := range want {
		a, err := os.ReadFile(filepath.Join(configDir, rel))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(chartDir, "files", rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("charts/switchboard/files/%s is not config/%s: run `make manifests`", rel, rel)
		}
	}
}

// TestChartKnowsEveryController checks the chart's controllers against the manager's table: a
// value per component, a kind per controller of the configmapwatcher's group.
func TestChartKnowsEveryController(t *testing.T) {
	c := loadChart(t)
	groups := map[string][]string{}
	// The rows of a group that are neither its kinds nor named as it have a switch of their own.
	switches := map[string]string{"verticalpodautoscaler": "verticalPodAutoscalers"}
	var order []string
	for _, row := range controllers.Table() {
		g := row.Group
		switch {
		case g == "":
			g = row.Name
		case strings.HasPrefix(row.Name, g+"-"):
			groups[g] = append(groups[g], strings.TrimPrefix(row.Name, g+"-"))
		case row.Name != g:
			key, ok := switches[row.Name]
			if !ok {
				t.Errorf("the chart has no switch for controller %s of group %s", row.Name, g)
				continue
			}
			if _, ok := c.Values["controllers"].(map[string]any)[g].(map[string]any)[key].(bool); !ok {
				t.Errorf("controllers.%s.%s: no such boolean in the chart's values, for controller %s", g, key, row.Name)
			}
		}
		if !slices.Contains(order, g) {
			order = append(order, g)
		}
	}
	values := c.Values["controllers"].(map[string]any)
	var got []string
	for name := range values {
		got = append(got, name)
	}
	sort.Strings(got)
	want := slices.Clone(order)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart's controllers against the table (-table +chart):\n%s", diff)
	}
	for g, kinds := range groups {
		var chartKinds []string
		for k := range values[g].(map[string]any)["kinds"].(map[string]any) {
			chartKinds = append(chartKinds, k)
		}
		sort.Strings(chartKinds)
		if diff := cmp.Diff(slices.Sorted(slices.Values(kinds)), chartKinds); diff != "" {
			t.Errorf("the chart's %s kinds against the table (-table +chart):\n%s", g, diff)
		}
	}
	// The templates list the components in the table's order, which --controllers and the
	// leader election Role follow.
	helpers := string(c.Templates[slices.IndexFunc(c.Templates, func(f *chart.File) bool { return f.Name == "templates/_helpers.tpl" })].Data)
	if want := `list "` + strings.Join(order, `" "`) + `"`; !strings.Contains(helpers, want) {
		t.Errorf("templates/_helpers.tpl does not list the components as the table does: %s", want)
	}
	// --controllers turns off the kinds the values turn off, listed in the table's order: a kind
	// the values have and the templates do not list would run whatever its value.
	for g, kinds := range groups {
		if want := `list "` + strings.Join(kinds, `" "`) + `"`; !strings.Contains(helpers, want) {
			t.Errorf("templates/_helpers.tpl does not list the %s kinds as the table does: %s", g, want)
		}
	}
}

// TestLint runs Helm's lint, strict, with the default values and each of ci/: no warning, no
// error.
func TestLint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append([]string{""}, files...) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			vals := map[string]any{}
			if file != "" {
				if vals, err = chartutil.ReadValuesFile(file); err != nil {
					t.Fatal(err)
				}
			}
			lint := action.NewLint()
			lint.Strict, lint.Namespace, lint.KubeVersion = true, namespace, helmsdk.KubeVersion
			result := lint.Run([]string{chartDir}, vals)
			for _, err := range result.Errors {
				t.Errorf("lint: %v", err)
			}
			for _, m := range result.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				}
			}
		})
	}
}

// TestVerticalPodAutoscalersSwitch: verticalPodAutoscalers: false leaves the
// verticalpodautoscaler off and the verticalscaler on.
func TestVerticalPodAutoscalersSwitch(t *testing.T) {
	for _, tc := range []struct {
		values string
		want   []string
	}{
		{"", []string{"verticalscaler", "verticalpodautoscaler"}},
		{"verticalPodAutoscalers: false", []string{"verticalscaler"}},
	} {
		d := managerDeployment(t, render(t, "controllers: {myapp: {enabled: false}, configmapwatcher: {enabled: false}, verticalscaler: {"+tc.values+"}}"))
		_, sel := testenv.ManagerOptions(t, d.Spec.Template.Spec.Containers[0].Args)
		if diff := cmp.Diff(tc.want, sel.Names()); diff != "" {
			t.Errorf("values %q: controllers (-want +got):\n%s", tc.values, diff)
		}
	}
}
