package recommender

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
)

// UsageReader reads the current resource usage of the Pods that match a selector in a
// namespace. Implementations: PodMetricsReader (metrics.k8s.io, served by metrics-server) and
// PodAnnotationReader (usage written on the Pods, for tests and clusters without
// metrics-server).
type UsageReader interface {
	PodUsage(ctx context.Context, namespace string, selector labels.Selector) ([]PodUsage, error)
}

// PodUsage is one observation of one Pod's containers.
type PodUsage struct {
	// Pod is the Pod's name.
	Pod string
	// Timestamp is when the usage was measured. The same measurement read twice has the same
	// timestamp and is counted once.
	Timestamp time.Time
	// Containers is the usage per container name.
	Containers map[string]corev1.ResourceList
}

// The values of --usage-source.
const (
	// UsageFromMetricsAPI reads PodMetrics from metrics.k8s.io.
	UsageFromMetricsAPI = "metrics-api"
	// UsageFromPodAnnotations reads the v1alpha1.UsageAnnotationPrefix annotations of the Pods.
	UsageFromPodAnnotations = "pod-annotations"
	// UsageOff turns the metrics source off.
	UsageOff = "off"
)

// UsageSources are the accepted values of --usage-source.
var UsageSources = []string{UsageFromMetricsAPI, UsageFromPodAnnotations, UsageOff}

// NewUsageReader returns the reader a --usage-source value names, reading through reader (an
// uncached reader: Pods and PodMetrics are read per Deployment, not watched).
func NewUsageReader(source string, reader client.Reader) (UsageReader, error) {
	switch source {
	case UsageFromMetricsAPI:
		return PodMetricsReader{Reader: reader}, nil
	case UsageFromPodAnnotations:
		return PodAnnotationReader{Reader: reader, Now: time.Now}, nil
	}
	return nil, fmt.Errorf("unknown usage source %q, want one of %s", source, strings.Join(UsageSources, ", "))
}

// podMetricsListGVK is metrics-server's PodMetrics list, read as unstructured data so that
// Switchboard needs no dependency on k8s.io/metrics.
var podMetricsListGVK = schema.GroupVersionKind{Group: "metrics.k8s.io", Version: "v1beta1", Kind: "PodMetricsList"}

// PodMetricsReader reads usage from the metrics.k8s.io API.
type PodMetricsReader struct {
	Reader client.Reader
}

// PodUsage lists the PodMetrics that match selector. It fails when the cluster does not serve
// metrics.k8s.io, and names the Pod whose metrics it cannot parse.
func (r PodMetricsReader) PodUsage(ctx context.Context, namespace string, selector labels.Selector) ([]PodUsage, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(podMetricsListGVK)
	err := r.Reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector})
	countMetricsAPIRead(err)
	if err != nil {
		return nil, fmt.Errorf("listing PodMetrics from metrics.k8s.io: %w", err)
	}
	out := make([]PodUsage, 0, len(list.Items))
	for i := range list.Items {
		usage, err := parsePodMetrics(list.Items[i].Object)
		if err != nil {
			return nil, fmt.Errorf("reading PodMetrics %s/%s: %w", namespace, list.Items[i].GetName(), err)
		}
		out = append(out, usage)
	}
	return out, nil
}

// parsePodMetrics reads one PodMetrics object: metadata.name, timestamp and
// containers[].{name,usage}.
func parsePodMetrics(obj map[string]any) (PodUsage, error) {
	name, _, err := unstructured.NestedString(obj, "metadata", "name")
	if err != nil {
		return PodUsage{}, err
	}
	stamp, _, err := unstructured.NestedString(obj, "timestamp")
	if err != nil {
		return PodUsage{}, err
	}
	at, err := time.Parse(time.RFC3339, stamp)
	if err != nil {
		return PodUsage{}, fmt.Errorf("timestamp: %w", err)
	}
	containers, _, err := unstructured.NestedSlice(obj, "containers")
	if err != nil {
		return PodUsage{}, err
	}
	usage := PodUsage{Pod: name, Timestamp: at, Containers: map[string]corev1.ResourceList{}}
	for i, c := range containers {
		container, ok := c.(map[string]any)
		if !ok {
			return PodUsage{}, fmt.Errorf("containers[%d] is not an object", i)
		}
		cname, _, err := unstructured.NestedString(container, "name")
		if err != nil || cname == "" {
			return PodUsage{}, fmt.Errorf("containers[%d].name missing or not a string", i)
		}
		values, _, err := unstructured.NestedStringMap(container, "usage")
		if err != nil {
			return PodUsage{}, fmt.Errorf("containers[%d].usage: %w", i, err)
		}
		list := corev1.ResourceList{}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			value, ok := values[string(res)]
			if !ok {
				continue
			}
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return PodUsage{}, fmt.Errorf("containers[%d].usage.%s: %w", i, res, err)
			}
			list[res] = q
		}
		usage.Containers[cname] = list
	}
	return usage, nil
}

// PodAnnotationReader reads usage from the v1alpha1.UsageAnnotationPrefix annotations of the Pods. Each
// read is a new sample, timestamped Now.
type PodAnnotationReader struct {
	Reader client.Reader
	Now    func() time.Time
}

// PodUsage lists the Pods that match selector and reads their usage annotations.
func (r PodAnnotationReader) PodUsage(ctx context.Context, namespace string, selector labels.Selector) ([]PodUsage, error) {
	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	return r.UsageOfPods(namespace, pods.Items)
}

// UsageOfPods reads the usage annotations of pods, listed by the caller. Pods without any are
// skipped; a malformed one is an error that names the Pod and the annotation.
func (r PodAnnotationReader) UsageOfPods(namespace string, pods []corev1.Pod) ([]PodUsage, error) {
	now := r.Now()
	var out []PodUsage
	for i := range pods {
		pod := &pods[i]
		usage := PodUsage{Pod: pod.Name, Timestamp: now, Containers: map[string]corev1.ResourceList{}}
		for key, value := range pod.Annotations {
			container, ok := strings.CutPrefix(key, v1alpha1.UsageAnnotationPrefix)
			if !ok {
				continue
			}
			list, err := ParseUsage(value)
			if err != nil {
				return nil, fmt.Errorf("pod %s/%s annotation %s: %w", namespace, pod.Name, key, err)
			}
			usage.Containers[container] = list
		}
		if len(usage.Containers) > 0 {
			out = append(out, usage)
		}
	}
	return out, nil
}

// ParseUsage parses "cpu=250m,memory=128Mi": cpu and/or memory, each once, non-negative.
func ParseUsage(value string) (corev1.ResourceList, error) {
	list := corev1.ResourceList{}
	for _, part := range strings.Split(value, ",") {
		name, q, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%q is not name=quantity", part)
		}
		res := corev1.ResourceName(strings.TrimSpace(name))
		if res != corev1.ResourceCPU && res != corev1.ResourceMemory {
			return nil, fmt.Errorf("unknown resource %q, want cpu or memory", name)
		}
		if _, dup := list[res]; dup {
			return nil, fmt.Errorf("%s given twice", res)
		}
		quantity, err := resource.ParseQuantity(strings.TrimSpace(q))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res, err)
		}
		if quantity.Sign() < 0 {
			return nil, fmt.Errorf("%s: negative quantity %s", res, q)
		}
		list[res] = quantity
	}
	return list, nil
}
