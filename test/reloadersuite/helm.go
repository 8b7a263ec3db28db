package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The environment the runner gives the helm stand-in (and through it, the suite's commands).
const (
	// envSubject is the controller under test: subjectSwitchboard or subjectReloader.
	envSubject = "RELOADERSUITE_SUBJECT"
	// envChart is Switchboard's chart, installed in place of the chart the suite names.
	envChart = "RELOADERSUITE_CHART"
	// envValues are values files (comma-separated) given before the suite's --set values.
	envValues = "RELOADERSUITE_VALUES"
	// envState is the directory of the runner's socket and of the releases' kubeconfigs and logs.
	envState = "RELOADERSUITE_STATE"
)

// The controllers a suite can run against.
const (
	subjectSwitchboard = "switchboard"
	subjectReloader    = "reloader"
)

// fieldManager applies the charts' objects, as Helm 3's own server-side apply would name itself.
const fieldManager = "helm"

// helmArgs are the arguments of the two commands Reloader's suite runs
// (test/e2e/utils/helm.go): `helm upgrade --install NAME CHART --namespace NS
// --create-namespace --reset-values --set K=V ... --wait --timeout T` and `helm uninstall NAME
// --namespace NS --ignore-not-found --wait`.
type helmArgs struct {
	command   string // "upgrade" or "uninstall"
	release   string
	chart     string
	namespace string
	sets      []string
	timeout   time.Duration
}

// parseHelmArgs reads the suite's helm command line; anything else is an error that names it,
// so that a newer suite that asks for more fails loudly rather than being half served.
func parseHelmArgs(args []string) (helmArgs, error) {
	out := helmArgs{namespace: "default", timeout: 5 * time.Minute}
	if len(args) == 0 {
		return out, errors.New("no command: the stand-in runs `upgrade --install` and `uninstall`")
	}
	out.command = args[0]
	var positional []string
	install := false
	for i := 1; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		takeValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 == len(args) {
				return "", fmt.Errorf("%s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "--install":
			install = true
		case "--namespace", "-n":
			out.namespace, err = takeValue()
		case "--set":
			var set string
			if set, err = takeValue(); err == nil {
				out.sets = append(out.sets, set)
			}
		case "--timeout":
			var t string
			if t, err = takeValue(); err == nil {
				out.timeout, err = time.ParseDuration(t)
			}
		case "--create-namespace", "--reset-values", "--wait", "--ignore-not-found":
			// What the stand-in always does.
		default:
			if strings.HasPrefix(arg, "-") {
				return out, fmt.Errorf("the stand-in does not know the flag %s", arg)
			}
			positional = append(positional, arg)
		}
		if err != nil {
			return out, err
		}
	}
	switch {
	case out.command == "upgrade" && install && len(positional) == 2:
		out.release, out.chart = positional[0], positional[1]
	case out.command == "uninstall" && len(positional) == 1:
		out.release = positional[0]
	default:
		return out, fmt.Errorf("the stand-in runs `upgrade --install NAME CHART` and `uninstall NAME`, not %q", strings.Join(args, " "))
	}
	return out, nil
}

// helmMain is the stand-in for `helm`: it renders the chart (Reloader's as the suite names it,
// or Switchboard's in its place), applies its objects, and has the runner start the
// controller as a process with the Deployment's arguments, environment and ServiceAccount.
func helmMain(args []string) int {
	a, err := parseHelmArgs(args)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
		defer cancel()
		if a.command == "uninstall" {
			err = uninstall(ctx, a)
		} else {
			err = upgradeInstall(ctx, a)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// adminClient is the admin's client, from KUBECONFIG.
func adminClient() (client.Client, error) {
	cfg, err := adminConfig()
	if err != nil {
		return nil, err
	}
	return clientOf(cfg)
}

func clientOf(cfg *rest.Config) (client.Client, error) {
	return client.New(cfg, client.Options{Scheme: scheme.Scheme})
}

// adminConfig is the admin's connection, from KUBECONFIG.
func adminConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, fmt.Errorf("reading KUBECONFIG: %w", err)
	}
	return cfg, nil
}

// capabilities reads the cluster's capabilities, as Helm does before it renders a chart.
func capabilities(cfg *rest.Config) (clusterCapabilities, error) {
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return clusterCapabilities{}, err
	}
	return discoverCapabilities(d)
}

func upgradeInstall(ctx context.Context, a helmArgs) error {
	subject := os.Getenv(envSubject)
	cfg, err := adminConfig()
	if err != nil {
		return err
	}
	c, err := clientOf(cfg)
	if err != nil {
		return err
	}
	caps, err := capabilities(cfg)
	if err != nil {
		return err
	}
	sup := supervisorClient{socket: filepath.Join(os.Getenv(envState), socketName)}
	// An upgrade replaces the running controller.
	if err := sup.stop(ctx, a.namespace, a.release); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, c, a.namespace); err != nil {
		return err
	}
	// Reloader's chart has one container, named after the release.
	chart, values, container := a.chart, []string(nil), ""
	if subject == subjectSwitchboard {
		chart, container = os.Getenv(envChart), "manager"
		if v := os.Getenv(envValues); v != "" {
			values = strings.Split(v, ",")
		}
	}
	objs, err := renderChart(chart, a.release, a.namespace, values, chartSets(subject, a.sets), caps)
	if err != nil {
		return err
	}
	obj, err := managerDeployment(objs)
	if err != nil {
		return err
	}
	suiteName := a.release + "-reloader"
	if err := renameDeployment(obj, suiteName); err != nil {
		return err
	}
	d, err := typedDeployment(obj)
	if err != nil {
		return err
	}
	if err := applyAll(ctx, c, a.namespace, objs); err != nil {
		return err
	}
	proc, err := processOf(d, container, a.namespace, suiteName+"-0", secretReaderOf(ctx, c))
	if err != nil {
		return err
	}
	kubeconfig, err := serviceAccountKubeconfig(os.Getenv(envState), a.namespace, proc.ServiceAccount)
	if err != nil {
		return err
	}
	return sup.start(ctx, startRequest{Namespace: a.namespace, Release: a.release, Process: proc, Kubeconfig: kubeconfig, Objects: refsOf(objs)})
}

// chartSets are the suite's --set values as the subject's chart takes them: all of them for
// Reloader's; for Switchboard's, all but the image's, which name the Reloader image the suite
// would have built (Switchboard's chart refuses a Reloader image other than the release's, and
// the controller runs as a process anyway).
func chartSets(subject string, sets []string) []string {
	if subject != subjectSwitchboard {
		return sets
	}
	var out []string
	for _, set := range sets {
		if !strings.HasPrefix(set, "image.") {
			out = append(out, set)
		}
	}
	return out
}

func uninstall(ctx context.Context, a helmArgs) error {
	c, err := adminClient()
	if err != nil {
		return err
	}
	sup := supervisorClient{socket: filepath.Join(os.Getenv(envState), socketName)}
	refs, err := sup.forget(ctx, a.namespace, a.release)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		obj := ref.object()
		if err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) && !isNoKind(err) {
			return fmt.Errorf("deleting %s %s: %w", ref.Kind, ref.Name, err)
		}
	}
	// --wait: until every object is gone.
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, ref := range refs {
			err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, ref.object())
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) && !isNoKind(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// isNoKind says whether err is about a kind the API server does not serve (a CRD uninstalled).
func isNoKind(err error) bool {
	return strings.Contains(err.Error(), "no matches for kind")
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// applyAll applies objs in order, a namespaced object without a namespace in namespace.
func applyAll(ctx context.Context, c client.Client, namespace string, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		namespaced, err := c.IsObjectNamespaced(obj)
		if err != nil {
			return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace(namespace)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}

// objectRef names an object a release applied, so that uninstall deletes it.
type objectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r objectRef) object() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(r.APIVersion)
	obj.SetKind(r.Kind)
	obj.SetNamespace(r.Namespace)
	obj.SetName(r.Name)
	return obj
}

// refsOf names objs, CustomResourceDefinitions left out: Helm keeps a chart's CRDs too.
func refsOf(objs []*unstructured.Unstructured) []objectRef {
	var refs []objectRef
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			continue
		}
		refs = append(refs, objectRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()})
	}
	return refs
}

// secretReaderOf reads Secrets' keys through c.
func secretReaderOf(ctx context.Context, c client.Client) secretReader {
	return func(namespace, name, key string) (string, bool, error) {
		var s corev1.Secret
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
		switch {
		case apierrors.IsNotFound(err):
			return "", false, nil
		case err != nil:
			return "", false, fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
		}
		v, ok := s.Data[key]
		return string(v), ok, nil
	}
}

// serviceAccountKubeconfig writes a kubeconfig that acts as the ServiceAccount namespace/sa,
// through the admin's impersonation: the controller process then has exactly the permissions
// the chart gave its ServiceAccount. It returns the file's path.
func serviceAccountKubeconfig(stateDir, namespace, sa string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(os.Getenv("KUBECONFIG"))
	if err != nil {
		return "", fmt.Errorf("reading KUBECONFIG: %w", err)
	}
	for _, user := range cfg.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + namespace + ":" + sa
		user.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	path := filepath.Join(stateDir, fmt.Sprintf("%s-%s.kubeconfig", namespace, sa))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
