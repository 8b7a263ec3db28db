package testenv

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BusyPod is Pod i of namespace ns as a busy cluster has them: a ReplicaSet's (ten Pods each),
// scheduled, with two containers with environment, mounts, probes and resources, labels and
// annotations of the usual tools, and the status a kubelet reports of a running Pod. It needs
// no node: the API server does not check that the node exists. A create drops the status:
// CreatePod writes it after.
func BusyPod(ns string, i int) *corev1.Pod {
	container := func(name string) corev1.Container {
		c := corev1.Container{Name: name, Image: "registry.example.com/team/" + name + ":v1.42.7",
			Args:      []string{"--port=8080", "--log-level=info", "--config=/etc/app/config.yaml"},
			Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{Requests: resources("250m", "256Mi"), Limits: resources("1", "512Mi")},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"},
				{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
				PeriodSeconds: 10},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
				PeriodSeconds: 20},
		}
		for e := range 10 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", e), Value: fmt.Sprintf("value-%d-of-some-length", e)})
		}
		return c
	}
	started := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	status := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "registry.example.com/team/" + name + ":v1.42.7",
			ImageID:     "registry.example.com/team/" + name + "@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			ContainerID: fmt.Sprintf("containerd://%064x", i), Ready: true, Started: new(true),
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Resources:          &corev1.ResourceRequirements{Requests: resources("250m", "256Mi"), Limits: resources("1", "512Mi")},
			AllocatedResources: resources("250m", "256Mi"),
			VolumeMounts: []corev1.VolumeMountStatus{{Name: "config", MountPath: "/etc/app"},
				{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}}
	}
	condition := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: started}
	}
	replicaSet := fmt.Sprintf("web-%d-7d9f8b6c4", i/10)
	podIP := fmt.Sprintf("10.%d.%d.%d", 64+i/65536%64, i/256%256, i%256)
	hostIP := fmt.Sprintf("192.168.%d.%d", i/10/250%250, i/10%250+1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%05d", replicaSet, i),
			Labels: map[string]string{"app": fmt.Sprintf("web-%d", i/10), "pod-template-hash": "7d9f8b6c4", "app.kubernetes.io/name": "web",
				"app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "v1.42.7", "team": "checkout"},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-30T10:00:00Z", "prometheus.io/scrape": "true",
				"prometheus.io/port": "8080", "checksum/config": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: replicaSet,
				UID: types.UID(fmt.Sprintf("6f1c2a9e-0000-4000-8000-%012d", i/10)), Controller: new(true), BlockOwnerDeletion: new(true)}}},
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i/10%250), Containers: []corev1.Container{container("app"), container("proxy")},
			ServiceAccountName: "default",
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(3607))}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, StartTime: &started,
			HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}}, PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
			Conditions: []corev1.PodCondition{condition(corev1.PodReadyToStartContainers), condition(corev1.PodInitialized),
				condition(corev1.PodReady), condition(corev1.ContainersReady), condition(corev1.PodScheduled)},
			ContainerStatuses: []corev1.ContainerStatus{status("app"), status("proxy")}},
	}
}

// CreatePod creates pod, then writes its status, which the create dropped.
func CreatePod(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	status := pod.Status
	if err := c.Create(ctx, pod); err != nil {
		return fmt.Errorf("creating Pod %s: %w", pod.Name, err)
	}
	pod.Status = status
	if err := c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("writing the status of Pod %s: %w", pod.Name, err)
	}
	return nil
}

func resources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}
