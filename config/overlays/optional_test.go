package overlays_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/switchboard/internal/testenv"
)

// metricsService names the manager's metrics Service.
const metricsService = "switchboard-controller-manager-metrics"

// checkOptional checks the optional components an overlay lists (config/certmanager,
// config/alerts, config/grafana), and that an overlay without one has none of its objects.
func checkOptional(t *testing.T, objs []*unstructured.Unstructured, optional []string) {
	kinds := map[string][]*unstructured.Unstructured{}
	for _, obj := range objs {
		kinds[obj.GetKind()] = append(kinds[obj.GetKind()], obj)
	}
	listed := func(name string) bool { return slices.Contains(optional, name) }
	if listed("certmanager") {
		checkCertManager(t, objs)
	} else if len(kinds["Certificate"]) > 0 || len(kinds["Issuer"]) > 0 || metricsCertPath(t, objs) != "" {
		t.Errorf("no certmanager component, yet %d Certificates, %d Issuers, --metrics-cert-path %q", len(kinds["Certificate"]), len(kinds["Issuer"]), metricsCertPath(t, objs))
	}
	if listed("alerts") != (len(kinds["PrometheusRule"]) == 1) {
		t.Errorf("alerts component listed: %v, PrometheusRules: %d", listed("alerts"), len(kinds["PrometheusRule"]))
	}
	if listed("alerts") && len(kinds["ServiceMonitor"]) == 0 {
		t.Error("the alerts select the job label the ServiceMonitor of ../prometheus gives: list it too")
	}
	var dashboards []*unstructured.Unstructured
	for _, cm := range kinds["ConfigMap"] {
		if cm.GetLabels()["grafana_dashboard"] == "1" {
			dashboards = append(dashboards, cm)
		}
	}
	if listed("grafana") != (len(dashboards) == 1) {
		t.Errorf("grafana component listed: %v, dashboards: %d", listed("grafana"), len(dashboards))
	}
	for _, cm := range dashboards {
		checkDashboardConfigMap(t, cm)
	}
	for _, monitor := range kinds["ServiceMonitor"] {
		checkServiceMonitorJob(t, objs, monitor)
	}
	// config/replicas: three replicas with their PodDisruptionBudget (checkReplicas checks how).
	if listed("replicas") != (len(kinds["PodDisruptionBudget"]) == 1) {
		t.Errorf("replicas component listed: %v, PodDisruptionBudgets: %d", listed("replicas"), len(kinds["PodDisruptionBudget"]))
	}
}

// metricsCertPath returns the manager's --metrics-cert-path, or "".
func metricsCertPath(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	for _, arg := range managerContainer(t, objs).Args {
		if path, ok := strings.CutPrefix(arg, "--metrics-cert-path="); ok {
			return path
		}
	}
	return ""
}

// named returns the object of kind and name, failing the test when there is none.
func named(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// str reads a string field of obj.
func str(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

// checkCertManager follows the certificate from the manager to Prometheus: the manager serves
// the files of a mounted Secret; a Certificate fills that Secret for the metrics Service's DNS
// name, signed by a CA Issuer whose CA a self-signed Issuer signs; and the ServiceMonitor, when
// there is one, verifies the serving certificate with that Secret's ca.crt and the Service's
// name.
func checkCertManager(t *testing.T, objs []*unstructured.Unstructured) {
	container := managerContainer(t, objs)
	path := metricsCertPath(t, objs)
	if path == "" {
		t.Fatal("the certmanager component is listed, yet the manager has no --metrics-cert-path")
	}
	opts, _ := testenv.ManagerOptions(t, container.Args)
	var mount *corev1.VolumeMount
	for i, m := range container.VolumeMounts {
		if m.MountPath == path {
			mount = &container.VolumeMounts[i]
		}
	}
	if mount == nil || !mount.ReadOnly {
		t.Fatalf("--metrics-cert-path=%s is not a read-only volume mount of the manager: %+v", path, container.VolumeMounts)
	}
	var volumes []corev1.Volume
	for _, d := range find[appsv1.Deployment](t, objs, "Deployment") {
		if d.Name == deployment {
			volumes = d.Spec.Template.Spec.Volumes
		}
	}
	var secretName string
	for _, v := range volumes {
		if v.Name != mount.Name || v.Secret == nil {
			continue
		}
		secretName = v.Secret.SecretName
		if v.Secret.Optional != nil && *v.Secret.Optional {
			t.Errorf("volume %s: an optional Secret lets the manager start with no certificate", v.Name)
		}
		var paths []string
		for _, item := range v.Secret.Items {
			paths = append(paths, item.Key+"="+item.Path)
		}
		if diff := cmp.Diff([]string{"tls.crt=" + opts.MetricsCertName, "tls.key=" + opts.MetricsCertKey}, paths); diff != "" {
			t.Errorf("volume %s: the Secret's items against --metrics-cert-name and --metrics-cert-key (-want +got):\n%s", v.Name, diff)
		}
	}
	if secretName == "" {
		t.Fatalf("volume %s is not a Secret", mount.Name)
	}

	serving := certificateFilling(t, objs, secretName)
	service := named(t, objs, "Service", metricsService)
	dnsName := service.GetName() + "." + service.GetNamespace() + ".svc"
	dnsNames, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames")
	if !slices.Contains(dnsNames, dnsName) {
		t.Errorf("Certificate %s dnsNames %v, want the metrics Service's %s", serving.GetName(), dnsNames, dnsName)
	}
	if serving.GetNamespace() != service.GetNamespace() {
		t.Errorf("Certificate %s in %s, the metrics Service in %s", serving.GetName(), serving.GetNamespace(), service.GetNamespace())
	}
	caIssuer := named(t, objs, "Issuer", str(serving, "spec", "issuerRef", "name"))
	ca := certificateFilling(t, objs, str(caIssuer, "spec", "ca", "secretName"))
	if ca == serving {
		t.Fatalf("Issuer %s signs with the serving certificate itself", caIssuer.GetName())
	}
	if isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA"); !isCA {
		t.Errorf("Certificate %s signs the serving certificate but is not a CA", ca.GetName())
	}
	root := named(t, objs, "Issuer", str(ca, "spec", "issuerRef", "name"))
	if _, ok, _ := unstructured.NestedMap(root.Object, "spec", "selfSigned"); !ok {
		t.Errorf("Issuer %s of the CA is not self-signed", root.GetName())
	}

	for _, monitor := range objs {
		if monitor.GetKind() != "ServiceMonitor" {
			continue
		}
		endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
		for i, e := range endpoints {
			tlsConfig, _, _ := unstructured.NestedMap(e.(map[string]any), "tlsConfig")
			want := map[string]any{
				"insecureSkipVerify": false,
				"serverName":         dnsName,
				"ca":                 map[string]any{"secret": map[string]any{"name": secretName, "key": "ca.crt"}},
			}
			if diff := cmp.Diff(want, tlsConfig); diff != "" {
				t.Errorf("ServiceMonitor %s endpoint %d tlsConfig: want it to verify the certificate (-want +got):\n%s", monitor.GetName(), i, diff)
			}
		}
	}
}

// certificateFilling returns the Certificate that fills the Secret secretName.
func certificateFilling(t *testing.T, objs []*unstructured.Unstructured, secretName string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() == "Certificate" && str(obj, "spec", "secretName") == secretName {
			return obj
		}
	}
	t.Fatalf("no Certificate fills the Secret %s", secretName)
	return nil
}

// checkServiceMonitorJob checks that a ServiceMonitor scrapes the metrics Service's https port,
// and gives the series the job label "switchboard" that the alerts and the dashboard select.
func checkServiceMonitorJob(t *testing.T, objs []*unstructured.Unstructured, monitor *unstructured.Unstructured) {
	service := named(t, objs, "Service", metricsService)
	jobLabel := str(monitor, "spec", "jobLabel")
	if got := service.GetLabels()[jobLabel]; got != "switchboard" {
		t.Errorf("ServiceMonitor %s jobLabel %q: the Service's label is %q, the alerts and the dashboard select job=\"switchboard\"", monitor.GetName(), jobLabel, got)
	}
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if service.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor %s selects %s=%s, which the metrics Service does not carry", monitor.GetName(), k, v)
		}
	}
	ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	for _, e := range endpoints {
		port, _, _ := unstructured.NestedString(e.(map[string]any), "port")
		if !slices.ContainsFunc(ports, func(p any) bool { return p.(map[string]any)["name"] == port }) {
			t.Errorf("ServiceMonitor %s scrapes port %q, which the metrics Service does not name", monitor.GetName(), port)
		}
	}
}

// checkDashboardConfigMap checks that the dashboard ConfigMap holds one dashboard that Grafana
// can read: JSON with a uid and panels.
func checkDashboardConfigMap(t *testing.T, cm *unstructured.Unstructured) {
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if len(data) != 1 {
		t.Fatalf("ConfigMap %s holds %d files, want one dashboard", cm.GetName(), len(data))
	}
	for file, text := range data {
		var dashboard struct {
			UID    string           `json:"uid"`
			Panels []map[string]any `json:"panels"`
		}
		if !strings.HasSuffix(file, ".json") {
			t.Errorf("ConfigMap %s: the sidecar loads *.json files, got %s", cm.GetName(), file)
		}
		if err := json.Unmarshal([]byte(text), &dashboard); err != nil || dashboard.UID == "" || len(dashboard.Panels) == 0 {
			t.Errorf("ConfigMap %s %s: not a dashboard (uid %q, %d panels): %v", cm.GetName(), file, dashboard.UID, len(dashboard.Panels), err)
		}
	}
}
