package helm_test

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/controllers/configmapwatcher"
	"github.com/example/switchboard/internal/testenv"
)

// reloaderDefaults is every value of Reloader's chart at Reloader's default.
var reloaderDefaults = filepath.Join("testdata", "reloader-defaults.yaml")

// overReloaderDefaults returns Reloader's default values with each of values laid over them in
// turn, as `helm install -f reloader-defaults.yaml -f ...` merges them: JSON, which Helm reads
// as YAML.
func overReloaderDefaults(t *testing.T, values ...string) string {
	t.Helper()
	data, err := os.ReadFile(reloaderDefaults)
	if err != nil {
		t.Fatal(err)
	}
	merged := map[string]any{}
	for _, doc := range slices.Backward(append([]string{string(data)}, values...)) {
		vals, err := chartutil.ReadValues([]byte(doc))
		if err != nil {
			t.Fatalf("the test's values %q: %v", doc, err)
		}
		merged = chartutil.MergeTables(merged, vals)
	}
	out, err := json.Marshal(merged)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// byKey returns the normalized objects by key.
func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, obj := range objs {
		out[key(obj)] = normalize(t, obj)
	}
	return out
}

// TestReloaderDefaultsRenderOurs: Reloader's whole default values file installs, and renders
// what our defaults render, but for the one default of Reloader's that asks for something of
// ours: isArgoRollouts: false leaves Argo Rollouts alone, where ours rolls them.
func TestReloaderDefaultsRenderOurs(t *testing.T) {
	want := byKey(t, render(t, "controllers: {configmapwatcher: {kinds: {rollouts: false}}}"))
	got := byKey(t, render(t, overReloaderDefaults(t)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Reloader's defaults against ours with kinds.rollouts=false (-ours +Reloader's):\n%s", diff)
	}
	// With our configmapwatcher-only file first, as the migration page installs it.
	want = byKey(t, render(t, valuesFile(t, "ci/configmapwatcher-values.yaml")+"\n  configmapwatcher: {kinds: {rollouts: false}}"))
	got = byKey(t, render(t, overReloaderDefaults(t, valuesFile(t, "ci/configmapwatcher-values.yaml"))))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with ci/configmapwatcher-values.yaml (-ours +Reloader's):\n%s", diff)
	}
}

// TestDefaultImageRepositoryIsValuesYAMLs: Reloader's image stands for ours, which the templates
// name apart from values.yaml.
func TestDefaultImageRepositoryIsValuesYAMLs(t *testing.T) {
	ours := managerDeployment(t, render(t, "")).Spec.Template.Spec.Containers[0].Image
	reloaders := managerDeployment(t, render(t, "image: {repository: ghcr.io/stakater/reloader, tag: v1.4.21, name: stakater/reloader}")).Spec.Template.Spec.Containers[0].Image
	if ours != reloaders {
		t.Errorf("Reloader's image renders %s, ours %s: switchboard.defaultImageRepository is not values.yaml's image.repository", reloaders, ours)
	}
}

// TestReloaderFlagsReachTheManager renders Reloader's values that become flags and checks, with
// the manager's own flag parsing, the options it takes from them; the flags its Options has no
// field for yet are checked in the rendered args.
func TestReloaderFlagsReachTheManager(t *testing.T) {
	customAnnotations := map[string]string{
		"configmap": "configmap-annotation", "secret": "secret-annotation", "auto": "auto-annotation",
		"secret_auto": "secret-auto-annotation", "configmap_auto": "configmap-auto-annotation", "search": "auto-search-annotation",
		"match": "search-match-annotation", "ignore": "ignore-annotation", "pausePeriod": "pause-deployment-annotation",
		"pauseTime": "pause-deployment-time-annotation",
	}
	var custom []string
	var customArgs []string
	for k, flag := range customAnnotations {
		custom = append(custom, k+": example.com/"+k)
		customArgs = append(customArgs, "--"+flag+"=example.com/"+k)
	}
	for _, tc := range []struct {
		name, values string
		controllers  []string
		options      map[string]any
		args         []string
	}{{
		name: "watching globally",
		values: `
reloader:
  autoReloadAll: true
  ignoreNamespaces: "kube-system, monitoring"
  namespaceSelector: "team:*"
  resourceLabelSelector: "reload=true"
  ignoreSecrets: true
  ignoreJobs: true
  ignoreCronJobs: true
  isArgoRollouts: true
  reloadOnDelete: true
  reloadOnCreate: true
  syncAfterRestart: true
  reloadStrategy: env-vars
  logFormat: json
  logLevel: debug
  enableCSIIntegration: false
  enableHA: true
  deployment: {replicas: 2}
  webhookUrl: "https://hooks.example.com/reloader?x=1"
  custom_annotations: {` + strings.Join(custom, ", ") + `}
`,
		controllers: []string{"myapp", "verticalscaler", "verticalpodautoscaler", "configmapwatcher-deployments", "configmapwatcher-statefulsets", "configmapwatcher-daemonsets", "configmapwatcher-rollouts"},
		options: map[string]any{
			"auto-reload-all": true, "namespaces-to-ignore": []string{"kube-system", "monitoring"}, "namespace-selector": "team:*",
			"resource-label-selector": "reload=true", "resources-to-ignore": []string{"secrets"}, "reload-on-delete": true,
			"webhook-url": "https://hooks.example.com/reloader?x=1", "notify-url": "", "watch-namespaces": "", "leader-elect": true, "replicas": int32(2),
			"enable-csi-integration": false,
		},
		args: append([]string{"--reload-strategy=env-vars", "--reload-on-create=true", "--sync-after-restart=true", "--log-format=json",
			"--log-level=debug"}, customArgs...),
	}, {
		name:        "in some namespaces",
		values:      "reloader: {watchGlobally: false, namespaces: 'team-b, team-a,team-a,', ignoreConfigMaps: true, isArgoRollouts: false, reloadStrategy: annotations, enableCSIIntegration: true}",
		controllers: []string{"myapp", "verticalscaler", "verticalpodautoscaler", "configmapwatcher-deployments", "configmapwatcher-statefulsets", "configmapwatcher-daemonsets", "configmapwatcher-cronjobs", "configmapwatcher-jobs"},
		options: map[string]any{
			"auto-reload-all": false, "namespaces-to-ignore": []string(nil), "namespace-selector": "", "resource-label-selector": "",
			"resources-to-ignore": []string{"configmaps"}, "reload-on-delete": false, "webhook-url": "", "notify-url": "",
			"watch-namespaces": "switchboard-system,team-a,team-b", "leader-elect": true, "replicas": int32(1),
			"enable-csi-integration": true,
		},
		args: []string{"--reload-strategy=annotations", "--enable-csi-integration"},
	}, {
		name:        "in the release's namespace, as a list",
		values:      "reloader: {watchGlobally: false, namespaces: [' team-a ']}\nwatchNamespaces: [team-a, switchboard-system]",
		controllers: []string{"myapp", "verticalscaler", "verticalpodautoscaler", "configmapwatcher-deployments", "configmapwatcher-statefulsets", "configmapwatcher-daemonsets", "configmapwatcher-cronjobs", "configmapwatcher-jobs", "configmapwatcher-rollouts"},
		options: map[string]any{
			"auto-reload-all": false, "namespaces-to-ignore": []string(nil), "namespace-selector": "", "resource-label-selector": "",
			"resources-to-ignore": []string(nil), "reload-on-delete": false, "webhook-url": "", "notify-url": "",
			"watch-namespaces": "switchboard-system,team-a", "leader-elect": true, "replicas": int32(1),
			"enable-csi-integration": false,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := managerDeployment(t, render(t, tc.values))
			args := d.Spec.Template.Spec.Containers[0].Args
			opts, sel := testenv.ManagerOptions(t, args)
			var names []string
			for _, c := range sel.Controllers {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff(tc.controllers, names); diff != "" {
				t.Errorf("controllers (-want +got):\n%s", diff)
			}
			cmw := configMapWatcherOptions(t, sel)
			got := map[string]any{
				"auto-reload-all": cmw.AutoReloadAll, "namespaces-to-ignore": cmw.NamespacesToIgnore, "namespace-selector": cmw.NamespaceSelector,
				"resource-label-selector": cmw.ResourceLabelSelector, "resources-to-ignore": cmw.ResourcesToIgnore, "reload-on-delete": cmw.ReloadOnDelete,
				"webhook-url": cmw.WebhookURL, "notify-url": cmw.NotifyURL, "watch-namespaces": opts.WatchNamespaces, "leader-elect": opts.LeaderElect,
				"replicas": *d.Spec.Replicas, "enable-csi-integration": cmw.EnableCSIIntegration,
			}
			if diff := cmp.Diff(tc.options, got); diff != "" {
				t.Errorf("the manager's options (-want +got):\n%s", diff)
			}
			for _, arg := range tc.args {
				if !slices.Contains(args, arg) {
					t.Errorf("args %q lack %s", args, arg)
				}
			}
		})
	}
}

// TestReloaderDeploymentValues renders reloader.deployment's values and checks the manager's
// Deployment, its Secret of variables and its ServiceAccount.
func TestReloaderDeploymentValues(t *testing.T) {
	objs := render(t, `
global: {imagePullSecrets: [regcred, {name: other}]}
imagePullSecrets: [{name: regcred}]
reloader:
  matchLabels: {tier: ops}
  serviceAccount: {labels: {sa: x}, automountServiceAccountToken: true, annotations: {example.com/role: r}}
  deployment:
    hostUsers: false
    dnsConfig: {options: [{name: ndots, value: "1"}]}
    revisionHistoryLimit: 5
    runtimeClassName: gvisor
    schedulerName: custom
    automountServiceAccountToken: true
    annotations: {example.com/note: a-note}
    labels: {provider: acme}
    volumes: [{name: tmp, emptyDir: {}}]
    volumeMounts: [{name: tmp, mountPath: /tmp}]
    securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroup: 2000}
    containerSecurityContext: {runAsGroup: 3000}
    livenessProbe: {timeoutSeconds: 3, periodSeconds: 30}
    readinessProbe: {failureThreshold: 6}
    gomaxprocsOverride: "2"
    gomemlimitOverride: 200MiB
    env:
      open: {ALERT_ON_RELOAD: "true", UNSET: ""}
      secret: {ALERT_WEBHOOK_URL: "https://hooks.example.com/x", ALERT_SINK: slack}
      field: {NODE: spec.nodeName}
      existing: {alert-secret: {ALERT_ADDITIONAL_INFO: info}}
    tolerations: [{key: k, operator: Exists}]
    topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]
    nodeSelector: {kubernetes.io/os: linux}
    affinity: {nodeAffinity: {}}
    priorityClassName: high
    resources: {requests: {cpu: 1m}}
    pod: {annotations: {example.com/pod: p}}
`)
	d := managerDeployment(t, objs)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	secretRef := func(secret, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}
	}
	wantEnv := []corev1.EnvVar{
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "GOMAXPROCS", Value: "2"},
		{Name: "GOMEMLIMIT", Value: "200MiB"},
		{Name: "ALERT_ON_RELOAD", Value: "true"},
		{Name: "ALERT_SINK", ValueFrom: secretRef("switchboard-reloader-env", "ALERT_SINK")},
		{Name: "ALERT_WEBHOOK_URL", ValueFrom: secretRef("switchboard-reloader-env", "ALERT_WEBHOOK_URL")},
		{Name: "ALERT_ADDITIONAL_INFO", ValueFrom: secretRef("alert-secret", "info")},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
	}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	got := map[string]any{
		"revisionHistoryLimit": d.Spec.RevisionHistoryLimit, "hostUsers": spec.HostUsers, "dnsConfig": spec.DNSConfig,
		"runtimeClassName": spec.RuntimeClassName, "schedulerName": spec.SchedulerName, "automount": spec.AutomountServiceAccountToken,
		"deploymentAnnotations": d.Annotations["example.com/note"], "deploymentLabel": d.Labels["provider"], "podLabels": d.Spec.Template.Labels,
		"podAnnotation": d.Spec.Template.Annotations["example.com/pod"], "volumes": spec.Volumes, "volumeMounts": c.VolumeMounts,
		"podSecurityContext": spec.SecurityContext, "user": [2]*int64{c.SecurityContext.RunAsUser, c.SecurityContext.RunAsGroup},
		"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "tolerations": spec.Tolerations, "spread": len(spec.TopologySpreadConstraints),
		"nodeSelector": spec.NodeSelector, "affinity": spec.Affinity, "priorityClassName": spec.PriorityClassName, "resources": c.Resources.Requests.Cpu().String(),
		"imagePullSecrets": spec.ImagePullSecrets,
	}
	want := map[string]any{
		"revisionHistoryLimit": ptr.To[int32](5), "hostUsers": ptr.To(false), "dnsConfig": &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}},
		"runtimeClassName": ptr.To("gvisor"), "schedulerName": "custom", "automount": ptr.To(true),
		"deploymentAnnotations": "a-note", "deploymentLabel": "acme",
		"podLabels":     map[string]string{"app.kubernetes.io/name": "switchboard", "app.kubernetes.io/instance": "switchboard", "app.kubernetes.io/component": "controller-manager", "provider": "acme", "tier": "ops"},
		"podAnnotation": "p", "volumes": []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		"volumeMounts":       []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		"podSecurityContext": &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		"user":               [2]*int64{ptr.To[int64](1000), ptr.To[int64](3000)},
		"liveness":           &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("probes")}}, InitialDelaySeconds: 15, PeriodSeconds: 30, TimeoutSeconds: 3},
		"readiness":          &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("probes")}}, InitialDelaySeconds: 5, PeriodSeconds: 10, FailureThreshold: 6},
		"tolerations":        []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}, "spread": 1,
		"nodeSelector": map[string]string{"kubernetes.io/os": "linux"}, "affinity": &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}},
		"priorityClassName": "high", "resources": "1m",
		"imagePullSecrets": []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "other"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the manager's Deployment (-want +got):\n%s", diff)
	}
	if sc := c.SecurityContext; sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container security context %+v: Reloader's laid over ours keeps it read-only, every capability dropped", sc)
	}
	for _, obj := range objs {
		switch key(obj) {
		case "Secret switchboard-system/switchboard-reloader-env":
			data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
			decoded := map[string]string{}
			for k, v := range data {
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					t.Fatal(err)
				}
				decoded[k] = string(b)
			}
			if diff := cmp.Diff(map[string]string{"ALERT_WEBHOOK_URL": "https://hooks.example.com/x", "ALERT_SINK": "slack"}, decoded); diff != "" {
				t.Errorf("the Secret of env.secret (-want +got):\n%s", diff)
			}
		case "ServiceAccount switchboard-system/switchboard-controller-manager":
			sa := &corev1.ServiceAccount{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, sa); err != nil {
				t.Fatal(err)
			}
			if sa.Labels["sa"] != "x" || sa.Annotations["example.com/role"] != "r" || sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken {
				t.Errorf("ServiceAccount %+v: want reloader.serviceAccount's labels, annotations and automountServiceAccountToken", sa.ObjectMeta)
			}
		}
	}
	if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Secret" }) {
		t.Error("no Secret for reloader.deployment.env.secret")
	}
}

// TestReloaderHA: reloader.enableHA runs reloader.deployment.replicas replicas with leader
// election, spread over nodes as Reloader's chart spreads them unless an affinity is set.
func TestReloaderHA(t *testing.T) {
	d := managerDeployment(t, render(t, "reloader: {enableHA: true, deployment: {replicas: 3}}"))
	opts, _ := testenv.ManagerOptions(t, d.Spec.Template.Spec.Containers[0].Args)
	affinity := d.Spec.Template.Spec.Affinity
	if *d.Spec.Replicas != 3 || !opts.LeaderElect || affinity == nil || affinity.PodAntiAffinity == nil ||
		!cmp.Equal(affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("replicas %d, leader election %v, affinity %+v: want 3, on, replicas preferably apart", *d.Spec.Replicas, opts.LeaderElect, affinity)
	}
	d = managerDeployment(t, render(t, "reloader: {enableHA: true, deployment: {replicas: 2}}\naffinity: {nodeAffinity: {}}"))
	if a := d.Spec.Template.Spec.Affinity; a.PodAntiAffinity != nil {
		t.Errorf("affinity %+v: an affinity of one's own replaces Reloader's anti-affinity", a)
	}
}

// TestReloaderAccess: the configmapwatcher's permissions are cluster-wide, or in the watched
// namespaces; reloader.enableCSIIntegration grants reading the Secrets Store CSI driver's objects
// where the configmapwatcher reads ConfigMaps, and at Reloader's default (false) nothing of them;
// reloader.rbac.labels label every RBAC object; reloader.rbac.enabled=false renders
// none; reloader.serviceAccount.create=false without a name runs as the namespace's default
// ServiceAccount.
func TestReloaderAccess(t *testing.T) {
	for _, tc := range []struct {
		values string
		want   []string
		csi    bool
	}{
		{"reloader: {enableCSIIntegration: false, rbac: {labels: {audit: 'yes'}}}", []string{"ClusterRole /switchboard-configmapwatcher"}, false},
		{"reloader: {enableCSIIntegration: false, watchGlobally: false, namespaces: [team-a], rbac: {labels: {audit: 'yes'}}}",
			[]string{"Role switchboard-system/switchboard-configmapwatcher", "Role team-a/switchboard-configmapwatcher"}, false},
		{"reloader: {enableCSIIntegration: true, rbac: {labels: {audit: 'yes'}}}", []string{"ClusterRole /switchboard-configmapwatcher"}, true},
		{"reloader: {enableCSIIntegration: true, watchGlobally: false, namespaces: [team-a], rbac: {labels: {audit: 'yes'}}}",
			[]string{"Role switchboard-system/switchboard-configmapwatcher", "Role team-a/switchboard-configmapwatcher"}, true},
	} {
		var watchers, csiReaders []string
		for _, obj := range render(t, tc.values) {
			if !strings.HasPrefix(obj.GetAPIVersion(), "rbac.authorization.k8s.io/") {
				continue
			}
			if obj.GetLabels()["audit"] != "yes" {
				t.Errorf("values %q: %s lacks reloader.rbac.labels", tc.values, key(obj))
			}
			rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
			for _, r := range rules {
				rule := rbacv1.PolicyRule{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.(map[string]any), &rule); err != nil {
					t.Fatal(err)
				}
				if slices.Contains(rule.APIGroups, "secrets-store.csi.x-k8s.io") {
					if diff := cmp.Diff([]string{"secretproviderclasses", "secretproviderclasspodstatuses"}, rule.Resources); diff != "" || !slices.Equal(rule.Verbs, []string{"get", "list", "watch"}) {
						t.Errorf("values %q: %s grants %+v, want reading SecretProviderClasses and their Pod statuses", tc.values, key(obj), rule)
					}
					csiReaders = append(csiReaders, key(obj))
				}
				if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "configmaps") && slices.Contains(rule.Verbs, "watch") {
					watchers = append(watchers, key(obj))
				}
			}
		}
		sort.Strings(watchers)
		if diff := cmp.Diff(tc.want, watchers); diff != "" {
			t.Errorf("values %q: what watches ConfigMaps (-want +got):\n%s", tc.values, diff)
		}
		sort.Strings(csiReaders)
		if want := map[bool][]string{true: tc.want}[tc.csi]; !cmp.Equal(want, csiReaders) {
			t.Errorf("values %q: what reads the CSI driver's objects: %v, want %v", tc.values, csiReaders, want)
		}
	}
	objs := render(t, "reloader: {rbac: {enabled: false}, serviceAccount: {create: false}}")
	for _, obj := range objs {
		if strings.HasPrefix(obj.GetAPIVersion(), "rbac.authorization.k8s.io/") || obj.GetKind() == "ServiceAccount" {
			t.Errorf("reloader.rbac.enabled=false, serviceAccount.create=false render %s", key(obj))
		}
	}
	if sa := managerDeployment(t, objs).Spec.Template.Spec.ServiceAccountName; sa != "default" {
		t.Errorf("reloader.serviceAccount.create=false without a name runs as %q, want default, as Reloader's chart", sa)
	}
}

// TestReloaderMonitoring: reloader.serviceMonitor, podDisruptionBudget and netpol become ours.
func TestReloaderMonitoring(t *testing.T) {
	objs := render(t, `
reloader:
  serviceMonitor: {enabled: true, labels: {release: prom}, interval: 30s, timeout: 10s, annotations: {a: b}, honorLabels: true,
    metricRelabelings: [{action: drop}], relabelings: [{action: keep}], targetLabels: [team]}
  podDisruptionBudget: {enabled: true, minAvailable: 1, maxUnavailable: 50%}
  netpol: {enabled: true, from: [{podSelector: {matchLabels: {app: prometheus}}}]}
`)
	var kinds []string
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ServiceMonitor":
			kinds = append(kinds, obj.GetKind())
			endpoints, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
			endpoint := endpoints[0].(map[string]any)
			got := map[string]any{
				"label": obj.GetLabels()["release"], "annotations": obj.GetAnnotations(), "interval": endpoint["interval"], "scrapeTimeout": endpoint["scrapeTimeout"],
				"honorLabels": endpoint["honorLabels"], "metricRelabelings": endpoint["metricRelabelings"], "relabelings": endpoint["relabelings"],
				"targetLabels": obj.Object["spec"].(map[string]any)["targetLabels"], "scheme": endpoint["scheme"],
			}
			want := map[string]any{
				"label": "prom", "annotations": map[string]string{"a": "b"}, "interval": "30s", "scrapeTimeout": "10s", "honorLabels": true,
				"metricRelabelings": []any{map[string]any{"action": "drop"}}, "relabelings": []any{map[string]any{"action": "keep"}},
				"targetLabels": []any{"team"}, "scheme": "https",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ServiceMonitor (-want +got):\n%s", diff)
			}
		case "PodDisruptionBudget":
			kinds = append(kinds, obj.GetKind())
			pdb := &policyv1.PodDisruptionBudget{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pdb); err != nil {
				t.Fatal(err)
			}
			if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "50%" {
				t.Errorf("PodDisruptionBudget %+v: want maxUnavailable 50%%, which wins over minAvailable as in Reloader's chart", pdb.Spec)
			}
		case "NetworkPolicy":
			kinds = append(kinds, obj.GetKind())
			np := &networkingv1.NetworkPolicy{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, np); err != nil {
				t.Fatal(err)
			}
			want := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prometheus"}}}}
			if diff := cmp.Diff(want, np.Spec.Ingress[0].From); diff != "" || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 8443 {
				t.Errorf("NetworkPolicy ingress %+v: want reloader.netpol.from to the metrics port (-want +got):\n%s", np.Spec.Ingress, diff)
			}
		}
	}
	if diff := cmp.Diff([]string{"NetworkPolicy", "PodDisruptionBudget", "ServiceMonitor"}, slices.Sorted(slices.Values(kinds))); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// An empty from lets any peer reach the metrics port, as Reloader's.
	for _, obj := range render(t, "reloader: {netpol: {enabled: true}}") {
		if obj.GetKind() == "NetworkPolicy" {
			ingress, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ingress")
			if _, has := ingress[0].(map[string]any)["from"]; has {
				t.Errorf("reloader.netpol.from empty: ingress %v, want no from", ingress)
			}
		}
	}
}

// TestReloaderValuesRefused installs the chart with Reloader values it must refuse: a value
// that asks for what Switchboard does not do, or that contradicts one of ours, fails naming it.
func TestReloaderValuesRefused(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"a typo", "reloader: {watchGlobaly: false}", "at '/reloader': additional properties 'watchGlobaly' not allowed"},
		{"a typo in the deployment", "reloader: {deployment: {replica: 2}}", "additional properties 'replica' not allowed"},
		{"an unknown custom annotation", "reloader: {custom_annotations: {configmaps: x}}", "additional properties 'configmaps' not allowed"},
		{"an unknown strategy", "reloader: {reloadStrategy: restart}", "at '/reloader/reloadStrategy'"},
		{"Reloader's undeclared namespace", "namespace: reloader", "additional properties 'namespace' not allowed"},
		{"root in the Pod", "reloader: {deployment: {securityContext: {runAsUser: 0}}}", "at '/reloader/deployment/securityContext/runAsUser'"},
		{"a writable root filesystem", "reloader: {deployment: {containerSecurityContext: {readOnlyRootFilesystem: false}}}", "at '/reloader/deployment/containerSecurityContext/readOnlyRootFilesystem'"},
		{"namespaces watching globally", "reloader: {namespaces: [team-a]}", "reloader.namespaces is set but reloader.watchGlobally is true"},
		{"watchNamespaces and watchGlobally", "reloader: {watchGlobally: false}\nwatchNamespaces: [team-a]", `watchNamespaces ["team-a"] and reloader.watchGlobally=false`},
		{"a bad namespace", "reloader: {watchGlobally: false, namespaces: 'Team_A'}", `reloader.namespaces: "Team_A" is not a namespace name`},
		{"ignoreNamespaces in some namespaces", "reloader: {watchGlobally: false, ignoreNamespaces: kube-system}", "reloader.ignoreNamespaces: Reloader honours it only with reloader.watchGlobally=true"},
		{"namespaceSelector in some namespaces", "reloader: {watchGlobally: false, namespaceSelector: 'team=a'}", "reloader.namespaceSelector: Reloader honours it only with reloader.watchGlobally=true"},
		{"a bad namespace to ignore", "reloader: {ignoreNamespaces: 'a,B_b'}", `reloader.ignoreNamespaces: "B_b" is not a namespace name`},
		{"two namespace selectors", "reloader: {namespaceSelector: 'team=a'}\ncontrollers: {configmapwatcher: {namespaceSelector: 'team=b'}}", "reloader.namespaceSelector and controllers.configmapwatcher.namespaceSelector are both set"},
		{"two label selectors", "reloader: {resourceLabelSelector: 'a=b'}\ncontrollers: {configmapwatcher: {resourceLabelSelector: 'c=d'}}", "reloader.resourceLabelSelector and controllers.configmapwatcher.resourceLabelSelector are both set"},
		{"both kinds ignored", "reloader: {ignoreSecrets: true, ignoreConfigMaps: true}", "reloader.ignoreSecrets and reloader.ignoreConfigMaps are both true"},
		{"ignored kinds that differ", "reloader: {ignoreSecrets: true}\ncontrollers: {configmapwatcher: {resourcesToIgnore: configmaps}}", "reloader.ignoreSecrets and controllers.configmapwatcher.resourcesToIgnore are both set"},
		{"Rollouts on and off", "reloader: {isArgoRollouts: true}\ncontrollers: {configmapwatcher: {kinds: {rollouts: false}}}", "reloader.isArgoRollouts=true and controllers.configmapwatcher.kinds.rollouts=false contradict"},
		{"two webhooks", "reloader: {webhookUrl: 'https://a.example.com'}\ncontrollers: {configmapwatcher: {webhookUrlSecret: {name: hook}}}", "reloader.webhookUrl and controllers.configmapwatcher.webhookUrl (or webhookUrlSecret) are both set"},
		{"two log levels", "reloader: {logLevel: debug}\nlogLevel: error", "reloader.logLevel and logLevel are both set"},
		{"the configmapwatcher off", "reloader: {reloadStrategy: annotations}\ncontrollers: {configmapwatcher: {enabled: false}}", "reloader.reloadStrategy configures the configmapwatcher, which is off"},
		{"HA without leader election", "reloader: {enableHA: true}\nleaderElection: {enabled: false}", "reloader.enableHA=true and leaderElection.enabled=false contradict"},
		{"replicas without HA", "reloader: {deployment: {replicas: 3}}", "reloader.deployment.replicas=3 without reloader.enableHA"},
		{"two replica counts", "reloader: {enableHA: true, deployment: {replicas: 3}}\nreplicaCount: 2", "reloader.deployment.replicas=3 and replicaCount=2 differ"},
		{"two node selectors", "reloader: {deployment: {nodeSelector: {a: b}}}\nnodeSelector: {c: d}", "reloader.deployment.nodeSelector and nodeSelector are both set"},
		{"a Pod label twice", "reloader: {matchLabels: {tier: a}}\npodLabels: {tier: b}", "reloader.matchLabels and podLabels both set tier"},
		{"two ServiceAccounts", "reloader: {serviceAccount: {name: a}}\nserviceAccount: {name: b}", "reloader.serviceAccount.name and serviceAccount.name are both set"},
		{"a variable of the chart's", "reloader: {deployment: {env: {open: {POD_NAMESPACE: x}}}}", "reloader.deployment.env: POD_NAMESPACE is set twice"},
		{"a volume of the chart's", "reloader: {deployment: {volumes: [{name: metrics-certs, emptyDir: {}}]}}", "reloader.deployment.volumes: the volume name metrics-certs"},
		{"a ServiceMonitor without metrics", "reloader: {serviceMonitor: {enabled: true}}\nmetrics: {enabled: false}", "reloader.serviceMonitor.enabled needs metrics.enabled"},
		{"a NetworkPolicy without metrics", "reloader: {netpol: {enabled: true}}\nmetrics: {enabled: false}", "reloader.netpol.enabled needs metrics.enabled"},
		{"Reloader's image at another tag", "image: {repository: ghcr.io/stakater/reloader, tag: v1.4.20}", `image.tag "v1.4.20" goes with Reloader's image`},
		{"Reloader's image from a mirror", "image: {repository: mirror.example.com/stakater/reloader}", `image.repository "mirror.example.com/stakater/reloader" is Reloader's image`},
		{"the CSI integration, the configmapwatcher off", "reloader: {enableCSIIntegration: true}\ncontrollers: {configmapwatcher: {enabled: false}}", "reloader.enableCSIIntegration configures the configmapwatcher, which is off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := install(t, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("installing with %s: %v; want an error with %q", tc.values, err, tc.want)
			}
		})
	}
}

// reloaderValueCases set each value of configmapwatcher.ReloaderChartValues to another value
// than Reloader's default, over Reloader's default values and base: a mapped value renders
// otherwise than base alone, an accepted one renders the same, and one accepted at its default
// only fails naming it.
var reloaderValueCases = map[string]struct{ base, value string }{
	"global.imageRegistry":                                 {"", "global: {imageRegistry: registry.example.com}"},
	"global.imagePullSecrets":                              {"", "global: {imagePullSecrets: [regcred]}"},
	"kubernetes.host":                                      {"", "kubernetes: {host: 'https://10.0.0.1'}"},
	"nameOverride":                                         {"", "nameOverride: reloader"},
	"fullnameOverride":                                     {"", "fullnameOverride: reloader"},
	"image.name":                                           {"", "image: {name: acme/reloader}"},
	"image.repository":                                     {"", "image: {repository: registry.example.com/switchboard}"},
	"image.tag":                                            {"image: {repository: ghcr.io/example/switchboard}", "image: {tag: v0.2.0}"},
	"image.digest":                                         {"image: {repository: ghcr.io/example/switchboard}", "image: {digest: 'sha256:" + strings.Repeat("ab", 32) + "'}"},
	"image.pullPolicy":                                     {"", "image: {pullPolicy: Always}"},
	"reloader.autoReloadAll":                               {"", "reloader: {autoReloadAll: true}"},
	"reloader.isArgoRollouts":                              {"", "reloader: {isArgoRollouts: true}"},
	"reloader.isOpenshift":                                 {"", "reloader: {isOpenshift: true}"},
	"reloader.ignoreSecrets":                               {"", "reloader: {ignoreSecrets: true}"},
	"reloader.ignoreConfigMaps":                            {"", "reloader: {ignoreConfigMaps: true}"},
	"reloader.ignoreJobs":                                  {"", "reloader: {ignoreJobs: true}"},
	"reloader.ignoreCronJobs":                              {"", "reloader: {ignoreCronJobs: true}"},
	"reloader.reloadOnCreate":                              {"", "reloader: {reloadOnCreate: true}"},
	"reloader.reloadOnDelete":                              {"", "reloader: {reloadOnDelete: true}"},
	"reloader.syncAfterRestart":                            {"", "reloader: {syncAfterRestart: true}"},
	"reloader.reloadStrategy":                              {"", "reloader: {reloadStrategy: annotations}"},
	"reloader.ignoreNamespaces":                            {"", "reloader: {ignoreNamespaces: kube-system}"},
	"reloader.namespaceSelector":                           {"", "reloader: {namespaceSelector: 'team=a'}"},
	"reloader.resourceLabelSelector":                       {"", "reloader: {resourceLabelSelector: 'reload=true'}"},
	"reloader.logFormat":                                   {"", "reloader: {logFormat: json}"},
	"reloader.logLevel":                                    {"", "reloader: {logLevel: debug}"},
	"reloader.watchGlobally":                               {"", "reloader: {watchGlobally: false}"},
	"reloader.namespaces":                                  {"reloader: {watchGlobally: false}", "reloader: {namespaces: [team-a]}"},
	"reloader.enableHA":                                    {"", "reloader: {enableHA: true}"},
	"reloader.enablePProf":                                 {"", "reloader: {enablePProf: true}"},
	"reloader.enableCSIIntegration":                        {"", "reloader: {enableCSIIntegration: true}"},
	"reloader.pprofAddr":                                   {"", "reloader: {pprofAddr: ':7070'}"},
	"reloader.readOnlyRootFileSystem":                      {"", "reloader: {readOnlyRootFileSystem: true}"},
	"reloader.legacy.rbac":                                 {"", "reloader: {legacy: {rbac: true}}"},
	"reloader.matchLabels":                                 {"", "reloader: {matchLabels: {tier: ops}}"},
	"reloader.enableMetricsByNamespace":                    {"", "reloader: {enableMetricsByNamespace: true}"},
	"reloader.deployment.dnsConfig":                        {"", "reloader: {deployment: {dnsConfig: {nameservers: [1.2.3.4]}}}"},
	"reloader.deployment.replicas":                         {"reloader: {enableHA: true}", "reloader: {deployment: {replicas: 3}}"},
	"reloader.deployment.revisionHistoryLimit":             {"", "reloader: {deployment: {revisionHistoryLimit: 5}}"},
	"reloader.deployment.hostUsers":                        {"", "reloader: {deployment: {hostUsers: false}}"},
	"reloader.deployment.nodeSelector":                     {"", "reloader: {deployment: {nodeSelector: {kubernetes.io/os: linux}}}"},
	"reloader.deployment.affinity":                         {"", "reloader: {deployment: {affinity: {nodeAffinity: {}}}}"},
	"reloader.deployment.volumeMounts":                     {"reloader: {deployment: {volumes: [{name: tmp, emptyDir: {}}]}}", "reloader: {deployment: {volumeMounts: [{name: tmp, mountPath: /tmp}]}}"},
	"reloader.deployment.volumes":                          {"", "reloader: {deployment: {volumes: [{name: tmp, emptyDir: {}}]}}"},
	"reloader.deployment.securityContext":                  {"", "reloader: {deployment: {securityContext: {runAsNonRoot: true, runAsUser: 1000}}}"},
	"reloader.deployment.containerSecurityContext":         {"", "reloader: {deployment: {containerSecurityContext: {runAsUser: 1000}}}"},
	"reloader.deployment.tolerations":                      {"", "reloader: {deployment: {tolerations: [{key: k, operator: Exists}]}}"},
	"reloader.deployment.topologySpreadConstraints":        {"", "reloader: {deployment: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}}"},
	"reloader.deployment.annotations":                      {"", "reloader: {deployment: {annotations: {a: b}}}"},
	"reloader.deployment.labels":                           {"", "reloader: {deployment: {labels: {provider: acme}}}"},
	"reloader.deployment.env.open":                         {"", "reloader: {deployment: {env: {open: {ALERT_ON_RELOAD: 'true'}}}}"},
	"reloader.deployment.env.secret":                       {"", "reloader: {deployment: {env: {secret: {ALERT_WEBHOOK_URL: 'https://hooks.example.com/x'}}}}"},
	"reloader.deployment.env.field":                        {"", "reloader: {deployment: {env: {field: {NODE: spec.nodeName}}}}"},
	"reloader.deployment.env.existing":                     {"", "reloader: {deployment: {env: {existing: {alerts: {ALERT_SINK: sink}}}}}"},
	"reloader.deployment.livenessProbe":                    {"", "reloader: {deployment: {livenessProbe: {timeoutSeconds: 3}}}"},
	"reloader.deployment.readinessProbe":                   {"", "reloader: {deployment: {readinessProbe: {timeoutSeconds: 3}}}"},
	"reloader.deployment.resources":                        {"", "reloader: {deployment: {resources: {requests: {cpu: 1m}}}}"},
	"reloader.deployment.pod.annotations":                  {"", "reloader: {deployment: {pod: {annotations: {a: b}}}}"},
	"reloader.deployment.priorityClassName":                {"", "reloader: {deployment: {priorityClassName: high}}"},
	"reloader.deployment.runtimeClassName":                 {"", "reloader: {deployment: {runtimeClassName: gvisor}}"},
	"reloader.deployment.schedulerName":                    {"", "reloader: {deployment: {schedulerName: custom}}"},
	"reloader.deployment.gomaxprocsOverride":               {"", "reloader: {deployment: {gomaxprocsOverride: '2'}}"},
	"reloader.deployment.gomemlimitOverride":               {"", "reloader: {deployment: {gomemlimitOverride: 200MiB}}"},
	"reloader.deployment.automountServiceAccountToken":     {"", "reloader: {deployment: {automountServiceAccountToken: true}}"},
	"reloader.service":                                     {"", "reloader: {service: {port: 9090}}"},
	"reloader.rbac.enabled":                                {"", "reloader: {rbac: {enabled: false}}"},
	"reloader.rbac.labels":                                 {"", "reloader: {rbac: {labels: {a: b}}}"},
	"reloader.serviceAccount.create":                       {"", "reloader: {serviceAccount: {create: false}}"},
	"reloader.serviceAccount.labels":                       {"", "reloader: {serviceAccount: {labels: {a: b}}}"},
	"reloader.serviceAccount.annotations":                  {"", "reloader: {serviceAccount: {annotations: {a: b}}}"},
	"reloader.serviceAccount.name":                         {"", "reloader: {serviceAccount: {name: reloader}}"},
	"reloader.serviceAccount.automountServiceAccountToken": {"", "reloader: {serviceAccount: {automountServiceAccountToken: true}}"},
	"reloader.custom_annotations":                          {"", "reloader: {custom_annotations: {configmap: example.com/cm}}"},
	"reloader.serviceMonitor.enabled":                      {"", "reloader: {serviceMonitor: {enabled: true}}"},
	"reloader.serviceMonitor.namespace":                    {"", "reloader: {serviceMonitor: {namespace: monitoring}}"},
	"reloader.serviceMonitor.interval":                     {"reloader: {serviceMonitor: {enabled: true}}", "reloader: {serviceMonitor: {interval: 10s}}"},
	"reloader.serviceMonitor.scheme":                       {"", "reloader: {serviceMonitor: {scheme: http}}"},
	"reloader.serviceMonitor.tlsConfig":                    {"", "reloader: {serviceMonitor: {tlsConfig: {insecureSkipVerify: true}}}"},
	"reloader.serviceMonitor.bearerTokenFile":              {"", "reloader: {serviceMonitor: {bearerTokenFile: /token}}"},
	"reloader.serviceMonitor.timeout":                      {"reloader: {serviceMonitor: {enabled: true}}", "reloader: {serviceMonitor: {timeout: 5s}}"},
	"reloader.serviceMonitor.labels":                       {"reloader: {serviceMonitor: {enabled: true}}", "reloader: {serviceMonitor: {labels: {release: prom}}}"},
	"reloader.serviceMonitor.annotations":                  {"reloader: {serviceMonitor: {enabled: true}}", "reloader: {serviceMonitor: {annotations: {a: b}}}"},
	"reloader.serviceMonitor.honorLabels":                  {"reloader: {serviceMonitor: {enabled: true}}", "reloader: {serviceMonitor: {honorLabels: false}}"},
	"reloader.serviceMonitor.metricRelabelings":            {"reloader: {serviceMonitor: {enabled: true}}", "reloader: {serviceMonitor: {metricRelabelings: [{action: drop}]}}"},
	"reloader.serviceMonitor.relabelings":                  {"reloader: {serviceMonitor: {enabled: true}}", "reloader: {serviceMonitor: {relabelings: [{action: keep}]}}"},
	"reloader.serviceMonitor.targetLabels":                 {"reloader: {serviceMonitor: {enabled: true}}", "reloader: {serviceMonitor: {targetLabels: [team]}}"},
	"reloader.podMonitor.enabled":                          {"", "reloader: {podMonitor: {enabled: true}}"},
	"reloader.podMonitor":                                  {"", "reloader: {podMonitor: {interval: 10s, labels: {a: b}}}"},
	"reloader.podDisruptionBudget.enabled":                 {"", "reloader: {podDisruptionBudget: {enabled: true}}"},
	"reloader.podDisruptionBudget.minAvailable":            {"reloader: {podDisruptionBudget: {enabled: true}}", "reloader: {podDisruptionBudget: {minAvailable: 1}}"},
	"reloader.podDisruptionBudget.maxUnavailable":          {"reloader: {podDisruptionBudget: {enabled: true}}", "reloader: {podDisruptionBudget: {maxUnavailable: 2}}"},
	"reloader.netpol.enabled":                              {"", "reloader: {netpol: {enabled: true}}"},
	"reloader.netpol.from":                                 {"reloader: {netpol: {enabled: true}}", "reloader: {netpol: {from: [{podSelector: {}}]}}"},
	"reloader.netpol.to":                                   {"", "reloader: {netpol: {to: [{ipBlock: {cidr: 10.0.0.0/8}}]}}"},
	"reloader.verticalPodAutoscaler.enabled":               {"", "reloader: {verticalPodAutoscaler: {enabled: true}}"},
	"reloader.verticalPodAutoscaler":                       {"", "reloader: {verticalPodAutoscaler: {maxAllowed: {cpu: 1}}}"},
	"reloader.webhookUrl":                                  {"", "reloader: {webhookUrl: 'https://hooks.example.com/x'}"},
}

// TestReloaderChartTableIsTheChart checks every entry of configmapwatcher.ReloaderChartValues
// against the chart, by rendering Reloader's defaults with the entry's value changed.
func TestReloaderChartTableIsTheChart(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range configmapwatcher.ReloaderChartValues {
		if seen[v.Path] {
			t.Errorf("%s is in ReloaderChartValues twice", v.Path)
		}
		seen[v.Path] = true
		tc, ok := reloaderValueCases[v.Path]
		if !ok {
			t.Errorf("%s: no case in reloaderValueCases", v.Path)
			continue
		}
		t.Run(v.Path, func(t *testing.T) {
			base := byKey(t, render(t, overReloaderDefaults(t, tc.base)))
			objs, err := install(t, overReloaderDefaults(t, tc.base, tc.value))
			switch v.Handling {
			case configmapwatcher.ChartDefaultOnly:
				if err == nil || !strings.Contains(err.Error(), v.Path) {
					t.Errorf("%s: %v; want an error naming %s", tc.value, err, v.Path)
				}
			case configmapwatcher.ChartMapped, configmapwatcher.ChartAccepted:
				if err != nil {
					t.Fatalf("%s: %v", tc.value, err)
				}
				diff := cmp.Diff(base, byKey(t, objs))
				if v.Handling == configmapwatcher.ChartMapped && diff == "" {
					t.Errorf("%s renders what Reloader's default renders: it is not mapped", tc.value)
				}
				if v.Handling == configmapwatcher.ChartAccepted && diff != "" {
					t.Errorf("%s changes what the chart renders, yet is only accepted (-default +given):\n%s", tc.value, diff)
				}
			default:
				t.Errorf("handling %q", v.Handling)
			}
			if v.Ours == "" {
				t.Error("no Ours")
			}
		})
	}
	for path := range reloaderValueCases {
		if !seen[path] {
			t.Errorf("reloaderValueCases has %s, which ReloaderChartValues lacks", path)
		}
	}
}

// TestReloaderChartTableCoversEveryValue: every value of Reloader's defaults (testdata) has an
// entry in configmapwatcher.ReloaderChartValues, its own or that of an object holding it.
func TestReloaderChartTableCoversEveryValue(t *testing.T) {
	data, err := os.ReadFile(reloaderDefaults)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ReadValues(data)
	if err != nil {
		t.Fatal(err)
	}
	var leaves []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if child, ok := m[k].(map[string]any); ok && len(child) > 0 {
				walk(prefix+k+".", child)
				continue
			}
			leaves = append(leaves, prefix+k)
		}
	}
	walk("", vals)
	for _, leaf := range leaves {
		if !slices.ContainsFunc(configmapwatcher.ReloaderChartValues, func(v configmapwatcher.ReloaderChartValue) bool {
			return v.Path == leaf || strings.HasPrefix(leaf, v.Path+".")
		}) {
			t.Errorf("Reloader's value %s has no entry in configmapwatcher.ReloaderChartValues", leaf)
		}
	}
	if len(leaves) < 90 {
		t.Errorf("only %d values in %s", len(leaves), reloaderDefaults)
	}
}

// TestReloaderValuesFiles renders the chart's Reloader examples after
// ci/configmapwatcher-values.yaml, as the migration page installs them, and checks what the
// manager takes from them.
func TestReloaderValuesFiles(t *testing.T) {
	cmwOnly := valuesFile(t, "ci/configmapwatcher-values.yaml")
	d := managerDeployment(t, render(t, cmwOnly+"\n"+valuesFile(t, "ci/reloader-values.yaml")))
	args := d.Spec.Template.Spec.Containers[0].Args
	_, sel := testenv.ManagerOptions(t, args)
	o := configMapWatcherOptions(t, sel)
	if !slices.Equal(o.NamespacesToIgnore, []string{"kube-system", "kube-public"}) || !o.ReloadOnDelete || o.ResourceLabelSelector != "reloader=enabled" ||
		*d.Spec.Replicas != 2 || !slices.Contains(args, "--reload-strategy=annotations") || !slices.Contains(args, "--configmap-annotation=example.com/configmap-reload") ||
		slices.ContainsFunc(sel.Controllers, func(c controllers.Controller) bool { return c.Name == "configmapwatcher-cronjobs" }) {
		t.Errorf("ci/reloader-values.yaml: args %q, replicas %d", args, *d.Spec.Replicas)
	}
	d = managerDeployment(t, render(t, cmwOnly+"\n"+valuesFile(t, "ci/reloader-namespaced-values.yaml")))
	opts, sel := testenv.ManagerOptions(t, d.Spec.Template.Spec.Containers[0].Args)
	if o := configMapWatcherOptions(t, sel); opts.WatchNamespaces != "switchboard-system,team-a,team-b" || o.WebhookURL != "https://hooks.example.com/reloader" {
		t.Errorf("ci/reloader-namespaced-values.yaml: --watch-namespaces %q, --webhook-url %q", opts.WatchNamespaces, o.WebhookURL)
	}
}
