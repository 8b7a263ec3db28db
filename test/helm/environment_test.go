package helm_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// podNamespace is the variable the chart always gives the manager.
var podNamespace = corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}

// TestExtraEnvAndVolumes: extraEnv, extraVolumes and extraVolumeMounts reach the manager's Pod
// as given, after the chart's own and Reloader's chart's, in order.
func TestExtraEnvAndVolumes(t *testing.T) {
	d := managerDeployment(t, render(t, `
extraEnv:
- {name: HTTPS_PROXY, value: "http://proxy.example.com:3128"}
- {name: NO_PROXY, value: "10.96.0.1,.svc,.cluster.local"}
- {name: PROXY_PASSWORD, valueFrom: {secretKeyRef: {name: proxy, key: password}}}
extraVolumes: [{name: tmp, emptyDir: {}}]
extraVolumeMounts: [{name: tmp, mountPath: /tmp}]
reloader:
  deployment:
    env: {open: {ALERT_SINK: slack}}
    volumes: [{name: cache, emptyDir: {}}]
    volumeMounts: [{name: cache, mountPath: /cache}]
`))
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	got := map[string]any{"env": c.Env, "volumes": spec.Volumes, "volumeMounts": c.VolumeMounts}
	want := map[string]any{
		"env": []corev1.EnvVar{
			podNamespace,
			{Name: "ALERT_SINK", Value: "slack"},
			{Name: "HTTPS_PROXY", Value: "http://proxy.example.com:3128"},
			{Name: "NO_PROXY", Value: "10.96.0.1,.svc,.cluster.local"},
			{Name: "PROXY_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "proxy"}, Key: "password"}}},
		},
		"volumes": []corev1.Volume{
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
		"volumeMounts": []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "tmp", MountPath: "/tmp"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the manager's Pod (-want +got):\n%s", diff)
	}
}

// TestTrustedCA: trustedCA mounts the key of the ConfigMap or the Secret read-only in a
// directory of its own, and names the directory in SSL_CERT_DIR, which Go reads besides the
// image's bundle (SSL_CERT_FILE, which would replace the bundle, stays unset); beside the
// metrics certificate's volume and extraEnv.
func TestTrustedCA(t *testing.T) {
	const dir = "/etc/switchboard/trusted-ca"
	items := []corev1.KeyToPath{{Key: "corp-root.pem", Path: "ca.crt"}}
	metricsCerts := corev1.Volume{Name: "metrics-certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "my-metrics-cert", Optional: ptr.To(false), Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}}}}
	for _, tc := range []struct {
		name, values string
		volumes      []corev1.Volume
		mounts       []corev1.VolumeMount
		env          []corev1.EnvVar
	}{
		{
			name:    "from a ConfigMap",
			values:  "trustedCA: {configMapName: corp-ca, key: corp-root.pem}",
			volumes: []corev1.Volume{{Name: "trusted-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "corp-ca"}, Items: items}}}},
			mounts:  []corev1.VolumeMount{{Name: "trusted-ca", MountPath: dir, ReadOnly: true}},
			env:     []corev1.EnvVar{podNamespace, {Name: "SSL_CERT_DIR", Value: dir}},
		},
		{
			name:    "from a Secret, with the metrics certificate and a proxy",
			values:  "trustedCA: {secretName: corp-ca, key: corp-root.pem}\nmetrics: {certificate: {secretName: my-metrics-cert}}\nextraEnv: [{name: HTTPS_PROXY, value: 'http://proxy.example.com:3128'}]",
			volumes: []corev1.Volume{metricsCerts, {Name: "trusted-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "corp-ca", Items: items}}}},
			mounts: []corev1.VolumeMount{
				{Name: "metrics-certs", MountPath: "/var/run/secrets/switchboard/metrics-certs", ReadOnly: true},
				{Name: "trusted-ca", MountPath: dir, ReadOnly: true},
			},
			env: []corev1.EnvVar{podNamespace, {Name: "SSL_CERT_DIR", Value: dir}, {Name: "HTTPS_PROXY", Value: "http://proxy.example.com:3128"}},
		},
		{
			name: "none",
			env:  []corev1.EnvVar{podNamespace},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := managerDeployment(t, render(t, tc.values))
			spec := d.Spec.Template.Spec
			c := spec.Containers[0]
			got := map[string]any{"volumes": spec.Volumes, "volumeMounts": c.VolumeMounts, "env": c.Env}
			want := map[string]any{"volumes": tc.volumes, "volumeMounts": tc.mounts, "env": tc.env}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the manager's Pod with %q (-want +got):\n%s", tc.values, diff)
			}
		})
	}
}
