// Command bundle writes the OLM bundle (bundle/manifests and bundle/metadata) from the same
// kustomize output as a plain deployment, so that the two cannot drift: the CRDs, the
// Deployment, the ServiceAccount's permissions and the metrics Service all come from
// `kubectl kustomize config/default`, and the ClusterServiceVersion's examples from
// `kubectl kustomize config/samples`. `make bundle` runs it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/internal/manifests"
)

// Options are what the kustomize output does not say.
type Options struct {
	// Version is the operator's semantic version, without a leading "v".
	Version string
	// Image is the manager's container image.
	Image string
}

// packageName is the OLM package, and the prefix of the ClusterServiceVersion's name.
const packageName = "switchboard"

func main() {
	manifests := flag.String("manifests", "", "output of `kubectl kustomize config/default`")
	examples := flag.String("examples", "", "output of `kubectl kustomize config/samples`")
	out := flag.String("out", "bundle", "bundle directory; its manifests/ and metadata/ are replaced")
	var opts Options
	flag.StringVar(&opts.Version, "version", "0.1.0", "operator version")
	flag.StringVar(&opts.Image, "image", "", "manager image; empty keeps the one of the manifests")
	flag.Parse()
	if err := run(*manifests, *examples, *out, opts); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(manifestsPath, examplesPath, out string, opts Options) error {
	if manifestsPath == "" || examplesPath == "" {
		return errors.New("-manifests and -examples are required")
	}
	manifests, err := readObjects(manifestsPath)
	if err != nil {
		return err
	}
	examples, err := readObjects(examplesPath)
	if err != nil {
		return err
	}
	files, err := Build(manifests, examples, opts)
	if err != nil {
		return err
	}
	for _, dir := range []string{"manifests", "metadata"} {
		if err := os.RemoveAll(filepath.Join(out, dir)); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(out, dir), 0o755); err != nil {
			return err
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := manifests.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// Build returns the bundle's files by path relative to the bundle directory.
func Build(manifests, examples []*unstructured.Unstructured, opts Options) (map[string][]byte, error) {
	if opts.Version == "" {
		return nil, errors.New("no version")
	}
	in, err := sortObjects(manifests)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	csv, err := clusterServiceVersion(in, examples, opts)
	if err != nil {
		return nil, err
	}
	if files[filepath.Join("manifests", packageName+".clusterserviceversion.yaml")], err = yaml.Marshal(csv); err != nil {
		return nil, err
	}
	// OLM installs these as they are; everything else is in the ClusterServiceVersion, or
	// is OLM's to create (the namespace, the ServiceAccount and the bindings).
	for _, obj := range in.extra {
		name := extraFileName(obj)
		// OLM creates namespaced objects in the namespace the operator is installed in.
		obj.SetNamespace("")
		if files[filepath.Join("manifests", name)], err = yaml.Marshal(obj.Object); err != nil {
			return nil, err
		}
	}
	files[filepath.Join("metadata", "annotations.yaml")] = []byte(`annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: ` + packageName + `
  operators.operatorframework.io.bundle.channels.v1: alpha
  operators.operatorframework.io.bundle.channel.default.v1: alpha
`)
	return files, nil
}

// extraFileName names a CRD's file as controller-gen does (GROUP_PLURAL.yaml), and another
// object's as operator-sdk does (NAME_GROUP_VERSION_KIND.yaml, lowercase, without the empty
// core group).
func extraFileName(obj *unstructured.Unstructured) string {
	if obj.GetKind() == "CustomResourceDefinition" {
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
		return group + "_" + plural + ".yaml"
	}
	gvk := obj.GroupVersionKind()
	parts := []string{obj.GetName()}
	if gvk.Group != "" {
		parts = append(parts, gvk.Group)
	}
	parts = append(parts, gvk.Version, strings.ToLower(gvk.Kind))
	return strings.Join(parts, "_") + ".yaml"
}

// sorted is the kustomize output by role in the bundle.
type sorted struct {
	deployment     *appsv1.Deployment
	serviceAccount string
	clusterRoles   map[string]*rbacv1.ClusterRole
	roles          map[string]*rbacv1.Role
	// boundClusterRoles and boundRoles are the roles bound to the ServiceAccount.
	boundClusterRoles []string
	boundRoles        []string
	crds              []*unstructured.Unstructured
	// extra are the objects OLM installs as they are: CRDs, Services, unbound ClusterRoles.
	extra []*unstructured.Unstructured
}

// sortObjects sorts the kustomize output, refusing kinds a registry+v1 bundle cannot carry.
func sortObjects(objs []*unstructured.Unstructured) (*sorted, error) {
	s := &sorted{clusterRoles: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{}}
	var clusterBindings []*rbacv1.ClusterRoleBinding
	var bindings []*rbacv1.RoleBinding
	for _, obj := range objs {
		var err error
		switch obj.GetKind() {
		case "Namespace":
		case "Deployment":
			if s.deployment != nil {
				return nil, errors.New("more than one Deployment")
			}
			s.deployment = &appsv1.Deployment{}
			err = convert(obj, s.deployment)
		case "ServiceAccount":
			if s.serviceAccount != "" {
				return nil, errors.New("more than one ServiceAccount")
			}
			s.serviceAccount = obj.GetName()
		case "ClusterRole":
			role := &rbacv1.ClusterRole{}
			err = convert(obj, role)
			s.clusterRoles[role.Name] = role
		case "Role":
			role := &rbacv1.Role{}
			err = convert(obj, role)
			s.roles[role.Name] = role
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			err = convert(obj, b)
			clusterBindings = append(clusterBindings, b)
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			err = convert(obj, b)
			bindings = append(bindings, b)
		case "CustomResourceDefinition":
			s.crds = append(s.crds, obj)
			s.extra = append(s.extra, obj)
		case "Service":
			s.extra = append(s.extra, obj)
		case "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
			// Left out: a registry+v1 bundle cannot carry admission policies, and an OLM
			// install may watch one namespace, where a cluster-wide policy would act in
			// namespaces no controller watches. Installed by OLM, the myapp controller adds
			// the finalizer itself, and the verticalscaler sizes new Pods once they run
			// (InPlaceOrRecreate) or replaces them (Recreate).
		default:
			return nil, fmt.Errorf("%s %s: a bundle cannot carry this kind", obj.GetKind(), obj.GetName())
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if s.deployment == nil || s.serviceAccount == "" {
		return nil, errors.New("the manifests need one Deployment and one ServiceAccount")
	}
	if sa := s.deployment.Spec.Template.Spec.ServiceAccountName; sa != s.serviceAccount {
		return nil, fmt.Errorf("the Deployment runs as %q, not as the ServiceAccount %q", sa, s.serviceAccount)
	}
	for _, b := range clusterBindings {
		if err := s.bind(b.Name, b.Subjects, b.RoleRef, true); err != nil {
			return nil, err
		}
	}
	for _, b := range bindings {
		if err := s.bind(b.Name, b.Subjects, b.RoleRef, false); err != nil {
			return nil, err
		}
	}
	bound := map[string]bool{}
	for _, name := range s.boundClusterRoles {
		bound[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(s.clusterRoles)) {
		if !bound[name] {
			// A role for others to bind (the metrics reader): OLM installs it as it is.
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s.clusterRoles[name])
			if err != nil {
				return nil, err
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetAPIVersion(rbacv1.SchemeGroupVersion.String())
			u.SetKind("ClusterRole")
			s.extra = append(s.extra, u)
		}
	}
	return s, nil
}

// bind records that a binding gives the ServiceAccount a role.
func (s *sorted) bind(binding string, subjects []rbacv1.Subject, ref rbacv1.RoleRef, cluster bool) error {
	if len(subjects) != 1 || subjects[0].Kind != "ServiceAccount" || subjects[0].Name != s.serviceAccount {
		return fmt.Errorf("binding %s: only bindings to the ServiceAccount %s can go into a bundle", binding, s.serviceAccount)
	}
	switch {
	case ref.Kind == "ClusterRole" && cluster:
		if s.clusterRoles[ref.Name] == nil {
			return fmt.Errorf("binding %s: no ClusterRole %s", binding, ref.Name)
		}
		s.boundClusterRoles = append(s.boundClusterRoles, ref.Name)
	case ref.Kind == "Role" && !cluster:
		if s.roles[ref.Name] == nil {
			return fmt.Errorf("binding %s: no Role %s", binding, ref.Name)
		}
		s.boundRoles = append(s.boundRoles, ref.Name)
	default:
		return fmt.Errorf("binding %s: a %s binding to a %s is not supported", binding, map[bool]string{true: "cluster", false: "namespaced"}[cluster], ref.Kind)
	}
	return nil
}

func convert(obj *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into)
}

// clusterServiceVersion builds the CSV as a map, so that no OLM API module is needed.
func clusterServiceVersion(in *sorted, examples []*unstructured.Unstructured, opts Options) (map[string]any, error) {
	deployment := in.deployment.DeepCopy()
	if err := watchTargetNamespaces(deployment, opts.Image); err != nil {
		return nil, err
	}
	deploymentSpec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&deployment.Spec)
	if err != nil {
		return nil, err
	}
	var clusterPermissions, permissions []any
	for _, name := range in.boundClusterRoles {
		clusterPermissions = append(clusterPermissions, map[string]any{"serviceAccountName": in.serviceAccount, "rules": in.clusterRoles[name].Rules})
	}
	for _, name := range in.boundRoles {
		permissions = append(permissions, map[string]any{"serviceAccountName": in.serviceAccount, "rules": in.roles[name].Rules})
	}
	owned, err := ownedCRDs(in.crds)
	if err != nil {
		return nil, err
	}
	almExamples, err := examplesJSON(in.crds, examples)
	if err != nil {
		return nil, err
	}
	image := deployment.Spec.Template.Spec.Containers[0].Image
	installSpec := map[string]any{
		"deployments": []any{map[string]any{"name": deployment.Name, "label": deployment.Labels, "spec": deploymentSpec}},
	}
	if clusterPermissions != nil {
		installSpec["clusterPermissions"] = clusterPermissions
	}
	if permissions != nil {
		installSpec["permissions"] = permissions
	}
	return map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "ClusterServiceVersion",
		"metadata": map[string]any{
			"name": packageName + ".v" + opts.Version,
			"annotations": map[string]any{
				"alm-examples":   almExamples,
				"capabilities":   "Basic Install",
				"categories":     "Application Runtime",
				"containerImage": image,
				"description":    "Pluggable controllers for MyApp, VerticalScaler and ConfigMap-driven rollouts.",
			},
		},
		"spec": map[string]any{
			"displayName": "Switchboard",
			"description": "Switchboard is a Kubernetes controller manager that hosts separate, pluggable controllers, " +
				"each switched on or off with --controllers:\n\n" +
				"* **myapp** runs a MyApp (an image, replicas, a port, environment) as a Deployment and a Service, and reports readiness in its status.\n" +
				"* **verticalscaler** recommends, and in updateMode Auto applies, CPU and memory for the containers of the Deployment a VerticalScaler names.\n" +
				"* **configmapwatcher** rolls the Deployments, StatefulSets, DaemonSets and CronJobs opted in with app.example.com/reload (or Stakater Reloader's annotations) when the data of a ConfigMap or Secret they use changes.\n",
			"version":  opts.Version,
			"maturity": "alpha",
			"keywords": []any{"controller", "deployment", "configmap", "secret", "reloader", "autoscaling"},
			"provider": map[string]any{"name": "Switchboard"},
			"links":    []any{map[string]any{"name": "Source", "url": "https://github.com/example/switchboard"}},
			"installModes": []any{
				map[string]any{"type": "OwnNamespace", "supported": true},
				map[string]any{"type": "SingleNamespace", "supported": true},
				map[string]any{"type": "MultiNamespace", "supported": false},
				map[string]any{"type": "AllNamespaces", "supported": true},
			},
			"install":                   map[string]any{"strategy": "deployment", "spec": installSpec},
			"customresourcedefinitions": map[string]any{"owned": owned},
		},
	}, nil
}

// watchTargetNamespaces makes the manager watch the namespaces OLM's OperatorGroup targets: OLM
// writes them to the Deployment's olm.targetNamespaces annotation (empty for all namespaces,
// which --watch-namespaces reads as all), and the downward API passes it on. Without it the
// OwnNamespace and SingleNamespace install modes would watch every namespace.
func watchTargetNamespaces(d *appsv1.Deployment, image string) error {
	if len(d.Spec.Template.Spec.Containers) != 1 {
		return fmt.Errorf("the Deployment %s has %d containers, want the manager alone", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	c := &d.Spec.Template.Spec.Containers[0]
	if image != "" {
		c.Image = image
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "WATCH_NAMESPACES", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"},
	}})
	c.Args = append(c.Args, "--watch-namespaces=$(WATCH_NAMESPACES)")
	return nil
}

// ownedCRDs describes each CRD's storage version for the CSV, from the CRD itself.
func ownedCRDs(crds []*unstructured.Unstructured) ([]any, error) {
	var owned []any
	for _, crd := range crds {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			version, _ := v.(map[string]any)
			if storage, _ := version["storage"].(bool); !storage {
				continue
			}
			description, _, _ := unstructured.NestedString(version, "schema", "openAPIV3Schema", "description")
			owned = append(owned, map[string]any{
				"name":        crd.GetName(),
				"version":     version["name"],
				"kind":        kind,
				"displayName": kind,
				"description": description,
			})
		}
	}
	if len(owned) == 0 {
		return nil, errors.New("no CRD with a storage version")
	}
	return owned, nil
}

// examplesJSON is the CSV's alm-examples: the samples of the owned kinds, as a JSON array.
func examplesJSON(crds, examples []*unstructured.Unstructured) (string, error) {
	owned := map[string]bool{}
	for _, crd := range crds {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		owned[kind] = true
	}
	var out []any
	for _, ex := range examples {
		if owned[ex.GetKind()] {
			out = append(out, ex.Object)
		}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	return string(data), err
}
