package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"

	"github.com/example/switchboard/internal/manifests"
)

// clusterCapabilities are what Helm reads from the cluster it installs to and gives a chart's
// templates as .Capabilities: the server's version, and the group/versions and kinds discovery
// lists. Reloader's chart grants the permission to patch Argo Rollouts only where
// .Capabilities has argoproj.io/v1alpha1.
type clusterCapabilities struct {
	kubeVersion *chartutil.KubeVersion
	apiVersions chartutil.VersionSet
}

// discoverCapabilities reads the cluster's capabilities through d, as `helm upgrade --install`
// does.
func discoverCapabilities(d discovery.DiscoveryInterface) (clusterCapabilities, error) {
	v, err := d.ServerVersion()
	if err != nil {
		return clusterCapabilities{}, fmt.Errorf("reading the server's version: %w", err)
	}
	apiVersions, err := action.GetVersionSet(d)
	if err != nil {
		return clusterCapabilities{}, fmt.Errorf("reading the server's API versions: %w", err)
	}
	return clusterCapabilities{
		kubeVersion: &chartutil.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor},
		apiVersions: apiVersions,
	}, nil
}

// renderChart renders the chart in chartDir as `helm upgrade --install release chartDir
// --namespace namespace -f valuesFiles... --set sets...` would on a cluster of caps, and returns
// its objects.
func renderChart(chartDir, release, namespace string, valuesFiles, sets []string, caps clusterCapabilities) ([]*unstructured.Unstructured, error) {
	c, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", chartDir, err)
	}
	vals := map[string]any{}
	for _, file := range valuesFiles {
		v, err := chartutil.ReadValuesFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading values %s: %w", file, err)
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	for _, set := range sets {
		if err := strvals.ParseInto(set, vals); err != nil {
			return nil, fmt.Errorf("--set %s: %w", set, err)
		}
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = release, namespace
	inst.KubeVersion, inst.APIVersions = caps.kubeVersion, caps.apiVersions
	rel, err := inst.Run(c, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart %s: %w", chartDir, err)
	}
	objs, err := manifests.Decode([]byte(rel.Manifest))
	if err != nil {
		return nil, fmt.Errorf("decoding the chart's manifests: %w", err)
	}
	return objs, nil
}

// managerDeployment returns the one Deployment of objs: both charts render the controller
// as the only Deployment.
func managerDeployment(objs []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var found []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" && obj.GroupVersionKind().Group == "apps" {
			found = append(found, obj)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("the chart rendered %d Deployments, want 1", len(found))
	}
	return found[0], nil
}

// typedDeployment converts a rendered Deployment.
func typedDeployment(obj *unstructured.Unstructured) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
		return nil, fmt.Errorf("reading Deployment %s: %w", obj.GetName(), err)
	}
	return &d, nil
}

// renameDeployment gives the manager's Deployment the name and Pod label the suite finds
// Reloader by (utils.ReloaderDeploymentName, utils.ReloaderPodSelector: "<release>-reloader"
// and app=<release>-reloader). The Deployment's Pods are kwok's: the controller itself runs as
// a process (processSpec), so the name changes nothing of what the suite tests.
func renameDeployment(obj *unstructured.Unstructured, name string) error {
	obj.SetName(name)
	labels, _, err := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
	if err != nil {
		return fmt.Errorf("reading the Pod template's labels of %s: %w", name, err)
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app"] = name
	return unstructured.SetNestedStringMap(obj.Object, labels, "spec", "template", "metadata", "labels")
}

// processSpec is how the controller of a rendered Deployment runs as a process beside the
// cluster: the container's arguments, its environment resolved as the kubelet resolves it, and
// the ServiceAccount whose permissions it runs with.
type processSpec struct {
	Args           []string `json:"args"`
	Env            []string `json:"env"`
	ServiceAccount string   `json:"serviceAccount"`
}

// secretReader reads a key of a Secret, for environment variables taken from one.
type secretReader func(namespace, name, key string) (string, bool, error)

// processOf reads the process spec of container of d (the first container when empty), in
// namespace, with podName standing for the Pod's name. A container command is the image's
// program, which the process replaces: only its arguments after the program are kept.
func processOf(d *appsv1.Deployment, container, namespace, podName string, readSecret secretReader) (processSpec, error) {
	spec := d.Spec.Template.Spec
	if len(spec.Containers) == 0 {
		return processSpec{}, fmt.Errorf("deployment %s has no container", d.Name)
	}
	c := spec.Containers[0]
	if container != "" {
		i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == container })
		if i < 0 {
			return processSpec{}, fmt.Errorf("deployment %s has no container %q", d.Name, container)
		}
		c = spec.Containers[i]
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	env := map[string]string{}
	var order []string
	for _, e := range c.Env {
		value, set, err := envValue(e, c, namespace, podName, sa, env, readSecret)
		if err != nil {
			return processSpec{}, fmt.Errorf("deployment %s, variable %s: %w", d.Name, e.Name, err)
		}
		if !set {
			continue
		}
		if _, seen := env[e.Name]; !seen {
			order = append(order, e.Name)
		}
		env[e.Name] = value
	}
	if len(c.EnvFrom) > 0 {
		return processSpec{}, fmt.Errorf("deployment %s: envFrom is not supported by the harness", d.Name)
	}
	var args []string
	if len(c.Command) > 1 {
		args = append(args, c.Command[1:]...)
	}
	args = append(args, c.Args...)
	for i, arg := range args {
		args[i] = expand(arg, env)
	}
	out := processSpec{Args: args, ServiceAccount: sa}
	for _, name := range order {
		out.Env = append(out.Env, name+"="+env[name])
	}
	return out, nil
}

// envValue resolves one variable as the kubelet does, from the variables before it; set is
// false for an optional reference that is missing.
func envValue(e corev1.EnvVar, c corev1.Container, namespace, podName, sa string, before map[string]string, readSecret secretReader) (string, bool, error) {
	src := e.ValueFrom
	switch {
	case src == nil:
		return expand(e.Value, before), true, nil
	case src.FieldRef != nil:
		switch src.FieldRef.FieldPath {
		case "metadata.namespace":
			return namespace, true, nil
		case "metadata.name":
			return podName, true, nil
		case "spec.serviceAccountName":
			return sa, true, nil
		case "status.podIP", "status.hostIP":
			return "127.0.0.1", true, nil
		}
		return "", false, fmt.Errorf("field %s is not supported by the harness", src.FieldRef.FieldPath)
	case src.ResourceFieldRef != nil:
		return resourceValue(c, src.ResourceFieldRef)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		value, found, err := readSecret(namespace, ref.Name, ref.Key)
		if err != nil {
			return "", false, err
		}
		if !found && (ref.Optional == nil || !*ref.Optional) {
			return "", false, fmt.Errorf("secret %s/%s has no key %s", namespace, ref.Name, ref.Key)
		}
		return value, found, nil
	}
	return "", false, errors.New("this kind of reference is not supported by the harness")
}

// resourceValue is a resourceFieldRef's value: the limit or request in the divisor's units
// (1 by default), rounded up as the kubelet does; a limit not set is the node's allocatable,
// which the harness leaves unset.
func resourceValue(c corev1.Container, ref *corev1.ResourceFieldSelector) (string, bool, error) {
	limits, kind, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", false, fmt.Errorf("resource %q is not limits.X or requests.X", ref.Resource)
	}
	list := c.Resources.Limits
	if limits == "requests" {
		list = c.Resources.Requests
	}
	q, found := list[corev1.ResourceName(kind)]
	if !found {
		return "", false, nil
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		return strconv.FormatInt(q.Value(), 10), true, nil
	}
	n := (q.MilliValue() + divisor.MilliValue() - 1) / divisor.MilliValue()
	return strconv.FormatInt(n, 10), true, nil
}

// expand replaces $(NAME) with the value of a variable defined before, as the kubelet expands
// a container's arguments and values; $$ is a literal $, and an unknown $(NAME) stays as it is.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if value, ok := env[name]; ok {
					b.WriteString(value)
					i += 2 + end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
