// Command dashboard records what the picture of the Grafana dashboard
// (docs/operations/dashboard.png) is drawn from: two replicas of the manager at work on the local
// cluster of `make run`, scraped every -scrape-interval into a file of their /metrics pages.
// test/monitoring's ./picture then loads the file into a Prometheus TSDB and draws each panel
// from Prometheus's answers to its queries. `make dashboard-picture` runs both.
//
// It starts the local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
// with two fake Nodes, metrics-server), applies config/overlays/ha but its Deployment, and runs
// the manager binary twice with the Deployment's args, as its ServiceAccount, as replicas
// switchboard-a and switchboard-b. Then, for -duration, it plays a day of work on a compressed
// clock (see scenario): MyApps and their ConfigMaps, StatefulSets and DaemonSets that roll on
// theirs, VerticalScalers reading kwok's emulated usage through metrics-server, a burst of HTTP
// triggers larger than the controllers' buffers, two minutes in which an admission policy refuses
// the manager's changes to Deployments, and the replica that leads myapp killed with SIGKILL and
// started again.
//
//	go run ./hack/dashboard -out bin/dashboard/scrapes.txt
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/localcluster"
	"github.com/example/switchboard/internal/manifests"
	"github.com/example/switchboard/internal/testenv"
)

// The installation the replicas play, as config/overlays/ha names it.
const (
	managerNamespace = "switchboard-system"
	serviceAccount   = "switchboard-controller-manager"
	deploymentName   = "switchboard-controller-manager"
	// workNamespace holds the workloads.
	workNamespace = "shop"
	// fieldManager writes the capture's own objects.
	fieldManager = "dashboard-capture"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	out := flag.String("out", filepath.Join("bin", "dashboard", "scrapes.txt"), "file to write the scrapes to")
	manager := flag.String("manager", "", "manager binary; empty builds it as `make build` does")
	duration := flag.Duration("duration", 12*time.Minute, "how long the replicas work once the cluster is up")
	interval := flag.Duration("scrape-interval", 10*time.Second, "time between two scrapes of each replica")
	families := flag.String("families", "", "comma-separated metric families to keep (a histogram by its name); empty keeps every one. `go run ./picture -families` in test/monitoring lists the dashboard's")
	flag.Parse()
	keep := familyFilter(*families)
	if err := run(*root, *out, *manager, *duration, *interval, keep); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

// capture is one run: the cluster, the replicas, and the file of scrapes.
type capture struct {
	root     string
	cluster  *localcluster.Cluster
	client   client.Client
	manager  string
	args     []string
	replicas map[string]*replica
	// killed is the replica killMyAppLeader killed, for restartKilled.
	killed *replica

	mu  sync.Mutex
	out *bufio.Writer
	// keep says which lines of a scraped page the file keeps.
	keep func(line string) bool
}

// replica is one manager process, its metrics address and its HTTP trigger.
type replica struct {
	name    string
	metrics string
	trigger *testenv.Trigger
	args    []string
	process *testenv.Process
}

func run(root, out, manager string, duration, interval time.Duration, keep func(string) bool) (err error) {
	dir, err := os.MkdirTemp("", "dashboard-capture")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	if manager == "" {
		manager = filepath.Join(dir, "manager")
		if err := testenv.Build(".", manager); err != nil {
			return err
		}
	}
	bin := func(name string) string { return filepath.Join(root, "bin", name) }
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(startCtx, localcluster.Config{
		Dir: filepath.Join(dir, "cluster"), K8sBinDir: bin("k8s"), Kwok: bin("kwok"), KwokStages: bin("kwok-stages.yaml"),
		KwokMetrics: bin("kwok-metrics.yaml"), MetricsServer: bin("metrics-server"), Nodes: 2,
	})
	if err != nil {
		return fmt.Errorf("starting the local cluster: %w", err)
	}
	defer func() { err = errors.Join(err, c.Stop()) }()
	cl, err := client.New(c.Config, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	cp := &capture{root: root, cluster: c, client: cl, manager: manager, out: bufio.NewWriter(f), keep: keep, replicas: map[string]*replica{}}
	if err := cp.install(ctx); err != nil {
		return err
	}
	if err := cp.startReplicas(dir); err != nil {
		return err
	}
	defer cp.stopReplicas()

	scrapeCtx, stopScraping := context.WithCancel(ctx)
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		cp.scrapeEvery(scrapeCtx, interval)
	}()
	scenarioErr := cp.scenario(ctx, duration)
	stopScraping()
	<-scraped
	if err := cp.out.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dashboard: wrote %s\n", out)
	return scenarioErr
}

// install applies config/overlays/ha but its Deployment, and the namespace of the workloads.
func (cp *capture) install(ctx context.Context) error {
	cmd := exec.Command("kubectl", "kustomize", filepath.Join(cp.root, "config", "overlays", "ha"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("kubectl kustomize config/overlays/ha: %w\n%s", err, stderr.String())
	}
	objs, err := manifests.Decode(rendered)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" && obj.GetName() == deploymentName {
			var d appsv1.Deployment
			if err := convert(obj, &d); err != nil {
				return err
			}
			cp.args = d.Spec.Template.Spec.Containers[0].Args
			continue
		}
		if err := cp.apply(ctx, obj); err != nil {
			return err
		}
	}
	if err := cp.apply(ctx, namespace(workNamespace)); err != nil {
		return err
	}
	// The CRDs and the MyApp finalizer policy were just created: wait until the API server sets
	// the finalizer of a new MyApp (the policy's admission needs the CRD's schema, which comes a
	// little after the CRD is served), and applies VerticalScalers.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		err := testenv.FinalizerSetAtCreation(ctx, cp.client, workNamespace)
		if err == nil {
			err = cp.apply(ctx, verticalScaler(0), client.DryRunAll)
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the CRDs are not served: %w", err)
		}
	}
}

// startReplicas runs the manager twice, as the ServiceAccount, with the Deployment's args, the
// HTTP trigger on, buffers of 8 events so that a burst of triggers overflows them, and shorter
// intervals and limits so that every kind of apply and roll happens in the capture.
func (cp *capture) startReplicas(dir string) error {
	clientset, err := kubernetes.NewForConfig(cp.cluster.Config)
	if err != nil {
		return err
	}
	expiry := int64(3 * 3600)
	tok, err := clientset.CoreV1().ServiceAccounts(managerNamespace).CreateToken(context.Background(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token for %s: %w", serviceAccount, err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := &rest.Config{Host: cp.cluster.Config.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cp.cluster.Config.CAData}}
	if err := testenv.WriteKubeconfig(kubeconfig, cfg, managerNamespace); err != nil {
		return err
	}
	for _, name := range []string{"switchboard-a", "switchboard-b"} {
		r := &replica{name: name}
		if r.metrics, err = testenv.LoopbackAddress(); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			return err
		}
		if r.trigger, err = testenv.NewTriggerIn(filepath.Join(dir, name)); err != nil {
			return err
		}
		r.args = append(append(append([]string{}, cp.args...),
			"--kubeconfig="+kubeconfig, "--leader-election-namespace="+managerNamespace,
			"--metrics-bind-address="+r.metrics, "--metrics-secure=false", "--health-probe-bind-address=0",
			"--source-buffer-size=8", "--usage-interval=15s", "--resync-interval=3m",
			// Applies and resizes every 2 minutes rather than 10, and a resize kwok never
			// finishes given up after 2 minutes (the Pod is evicted instead): the 12 minutes
			// show each kind of apply. Six rolls a minute, fewer than the ConfigMaps' changes
			// ask for (each takes the worker and five MyApps' Deployments): some wait their turn.
			"--min-apply-interval=2m", "--in-place-resize-timeout=2m", "--max-rollouts-per-minute=6"), r.trigger.Args...)
		if err := r.start(cp.manager); err != nil {
			return err
		}
		cp.replicas[name] = r
	}
	return nil
}

func (r *replica) start(manager string) error {
	p, err := testenv.StartProcess(testenv.Command{Binary: manager, Args: r.args, MetricsAddress: r.metrics})
	if err != nil {
		return err
	}
	r.process = p
	return nil
}

func (cp *capture) stopReplicas() {
	for _, r := range cp.replicas {
		_ = r.process.Stop(30 * time.Second)
	}
}

// scrapeEvery scrapes every replica each interval until ctx ends, as Prometheus would.
func (cp *capture) scrapeEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, r := range cp.replicas {
			cp.scrape(ctx, r)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scrape appends one scrape of r to the file: a line "# SCRAPE <replica> <unix ms>" and the
// kept families' lines, or "# SCRAPE <replica> <unix ms> down" when the scrape failed.
func (cp *capture) scrape(ctx context.Context, r *replica) {
	at := time.Now()
	scrapeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	page, err := get(scrapeCtx, "http://"+r.metrics+"/metrics")
	if ctx.Err() != nil {
		// The capture is over, not the replica.
		return
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if err != nil {
		fmt.Fprintf(cp.out, "# SCRAPE %s %d down\n", r.name, at.UnixMilli())
		return
	}
	fmt.Fprintf(cp.out, "# SCRAPE %s %d\n", r.name, at.UnixMilli())
	for _, line := range strings.Split(page, "\n") {
		if cp.keep(line) {
			fmt.Fprintln(cp.out, line)
		}
	}
}

// familyFilter returns what keeps the lines of a metrics page that belong to the families listed
// (comma-separated; every family when none is): their samples (a histogram's _bucket, _sum and
// _count too) and their HELP and TYPE lines.
func familyFilter(list string) func(line string) bool {
	families := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			families[f] = true
		}
	}
	return func(line string) bool {
		if line == "" {
			return false
		}
		name := line
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name = rest
		} else if strings.HasPrefix(line, "#") {
			return false
		}
		if len(families) == 0 {
			return true
		}
		name, _, _ = strings.Cut(name, " ")
		name, _, _ = strings.Cut(name, "{")
		if families[name] {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && families[base] {
				return true
			}
		}
		return false
	}
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}

// step is a moment of the scenario: at (from the start) do runs.
type step struct {
	at   time.Duration
	what string
	do   func(ctx context.Context) error
}

// scenario plays the work of the capture over duration, the steps at fixed fractions of it so
// that a shorter run keeps their order, and changes a ConfigMap and a MyApp now and then.
func (cp *capture) scenario(ctx context.Context, duration time.Duration) error {
	at := func(fraction float64) time.Duration { return time.Duration(fraction * float64(duration)) }
	steps := []step{
		{0, "creating the workloads", cp.createWorkloads},
		{at(0.25), "posting a burst of HTTP triggers", cp.triggerBurst},
		{at(0.35), "refusing the manager's changes to Deployments", cp.freezeDeployments},
		{at(0.50), "accepting them again", cp.thawDeployments},
		{at(0.60), "killing the replica that leads myapp", cp.killMyAppLeader},
		{at(0.68), "starting it again", cp.restartKilled},
		{at(0.80), "posting a burst of HTTP triggers", cp.triggerBurst},
	}
	start := time.Now()
	tick := time.NewTicker(20 * time.Second)
	defer tick.Stop()
	for n := 0; time.Since(start) < duration; {
		for len(steps) > 0 && time.Since(start) >= steps[0].at {
			fmt.Fprintf(os.Stderr, "dashboard: %s: %s\n", time.Since(start).Round(time.Second), steps[0].what)
			if err := steps[0].do(ctx); err != nil {
				return fmt.Errorf("%s: %w", steps[0].what, err)
			}
			steps = steps[1:]
		}
		<-tick.C
		n++
		if err := cp.changeSomething(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// The workloads: MyApps taking their environment from ConfigMaps, each with a VerticalScaler
// that applies its recommendations (in place, by eviction, or through the Pod template, in
// turn; the StatefulSet's in place), and, opted in to the configmapwatcher with Reloader's annotation, a StatefulSet and a
// DaemonSet taking the first ConfigMap, a Deployment taking all of them (it rolls at each
// change, and fails to while Deployments are frozen), and a Deployment taking one that does not
// exist (a skipped roll at each of its reconciles).
const (
	myApps     = 30
	configMaps = 6
)

func (cp *capture) createWorkloads(ctx context.Context) error {
	for i := range configMaps {
		if err := cp.apply(ctx, configMap(i, 0)); err != nil {
			return err
		}
	}
	for i := range myApps {
		for _, obj := range []client.Object{myApp(i), verticalScaler(i)} {
			if err := cp.apply(ctx, obj); err != nil {
				return err
			}
		}
	}
	labels := map[string]string{"app": "cache"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "cache", Image: "redis:7", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "config-0"}}}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}}}}}
	reload := map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}
	set := &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workNamespace, Name: "cache", Annotations: reload},
		Spec:       appsv1.StatefulSetSpec{Replicas: new(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	agentLabels := map[string]string{"app": "agent"}
	agent := template.DeepCopy()
	agent.Labels = agentLabels
	daemons := &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workNamespace, Name: "agent", Annotations: reload},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: agentLabels}, Template: *agent}}
	worker := deployment("worker", template)
	for i := range configMaps {
		worker.Spec.Template.Spec.Containers[0].EnvFrom = append(worker.Spec.Template.Spec.Containers[0].EnvFrom,
			corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("config-%d", i)}}})
	}
	orphan := deployment("orphan", template)
	orphan.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "config-missing"}}}}
	// The StatefulSet's Pods ask for CPU (the MyApps' ask for nothing, a QoS class that a resize
	// cannot change: the API server refuses those, and they are evicted instead): they are
	// resized in place.
	inPlace := &v1alpha1.VerticalScaler{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VerticalScaler"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workNamespace, Name: "cache"},
		Spec: v1alpha1.VerticalScalerSpec{TargetRef: &v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "cache"},
			UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate}}
	for _, obj := range []client.Object{set, daemons, worker, orphan, inPlace} {
		if err := cp.apply(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// deployment is a Deployment of one replica named name, opted in to the configmapwatcher with
// Reloader's annotation, with a copy of template as its Pod template.
func deployment(name string, template corev1.PodTemplateSpec) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	t := template.DeepCopy()
	t.Labels = labels
	return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workNamespace, Name: name, Annotations: map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}},
		Spec:       appsv1.DeploymentSpec{Replicas: new(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: *t}}
}

// changeSomething changes a ConfigMap (every Deployment, StatefulSet or DaemonSet that takes it
// rolls) and the replicas of a MyApp, in turn.
func (cp *capture) changeSomething(ctx context.Context, n int) error {
	if n%2 == 0 {
		return cp.apply(ctx, configMap(n/2%configMaps, n))
	}
	app := &v1alpha1.MyApp{}
	if err := cp.client.Get(ctx, client.ObjectKey{Namespace: workNamespace, Name: fmt.Sprintf("web-%d", n%myApps)}, app); err != nil {
		return err
	}
	app.Spec.Replicas = 1 + int32(n%3)
	return cp.client.Update(ctx, app)
}

// triggerBurst posts every MyApp and VerticalScaler, ten times over, to each replica's HTTP
// trigger in one request per controller: more than the buffers of 8 hold, so that some are
// dropped; a standby replica refuses them.
func (cp *capture) triggerBurst(context.Context) error {
	type target struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	var targets []target
	for range 10 {
		for i := range myApps {
			targets = append(targets, target{workNamespace, fmt.Sprintf("web-%d", i)})
		}
	}
	body, err := json.Marshal(targets)
	if err != nil {
		return err
	}
	for _, r := range cp.replicas {
		for _, controller := range []string{"myapp", "verticalscaler"} {
			// A replica that is down (killed) does not answer: the burst goes to the others.
			_, _, _ = r.trigger.Post(controller, testenv.TriggerToken, string(body))
		}
	}
	return nil
}

// freezePolicy refuses the manager's updates and patches of the Deployments in workNamespace,
// and its writes of VerticalScalerCheckpoints there: the myapp controller, the configmapwatcher
// (failed rolls) and the verticalscaler then fail their reconciles of those, and retry with
// backoff, and the verticalscaler's checkpoint writes fail.
func freezePolicy() []client.Object {
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": "dashboard-capture-freeze"},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{
				map[string]any{"apiGroups": []any{"apps"}, "apiVersions": []any{"v1"}, "operations": []any{"UPDATE"}, "resources": []any{"deployments"}},
				map[string]any{"apiGroups": []any{v1alpha1.GroupVersion.Group}, "apiVersions": []any{v1alpha1.GroupVersion.Version},
					"operations": []any{"CREATE", "UPDATE"}, "resources": []any{"verticalscalercheckpoints"}},
			}},
			"matchConditions": []any{map[string]any{"name": "the-manager",
				"expression": fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", managerNamespace, serviceAccount)}},
			"validations": []any{map[string]any{"expression": "false", "message": "Deployments and checkpoints are frozen for the dashboard's capture"}},
		},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": "dashboard-capture-freeze"},
		"spec": map[string]any{
			"policyName":        "dashboard-capture-freeze",
			"validationActions": []any{"Deny"},
			"matchResources": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{
				"kubernetes.io/metadata.name": workNamespace}}},
		},
	}}
	return []client.Object{policy, binding}
}

func (cp *capture) freezeDeployments(ctx context.Context) error {
	for _, obj := range freezePolicy() {
		if err := cp.apply(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

func (cp *capture) thawDeployments(ctx context.Context) error {
	for _, obj := range freezePolicy() {
		if err := cp.client.Delete(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// killMyAppLeader kills, with SIGKILL, the replica whose switchboard_controller_leader says it
// leads myapp: its Leases are taken over by the other after their duration.
func (cp *capture) killMyAppLeader(ctx context.Context) error {
	for _, r := range cp.replicas {
		leaders, err := r.process.MetricByLabel(ctx, "switchboard_controller_leader", "controller")
		if err != nil {
			return err
		}
		if leaders["myapp"] == 1 {
			cp.killed = r
			return r.process.Kill()
		}
	}
	return errors.New("no replica leads myapp")
}

func (cp *capture) restartKilled(context.Context) error {
	if cp.killed == nil {
		return errors.New("no replica was killed")
	}
	return cp.killed.start(cp.manager)
}

// myApp is the i-th MyApp: two replicas, its environment from one of the ConfigMaps.
func myApp(i int) *v1alpha1.MyApp {
	return &v1alpha1.MyApp{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MyApp"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workNamespace, Name: fmt.Sprintf("web-%d", i)},
		Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 2,
			EnvFrom: []v1alpha1.ConfigMapEnvSource{{ConfigMapName: fmt.Sprintf("config-%d", i%configMaps)}}}}
}

// updateModes are the VerticalScalers' modes, in turn: every way of applying a recommendation.
var updateModes = []v1alpha1.UpdateMode{v1alpha1.UpdateModeInPlaceOrRecreate, v1alpha1.UpdateModeRecreate, v1alpha1.UpdateModeAuto}

// verticalScaler is the VerticalScaler of the i-th MyApp's Deployment, applying what it
// recommends in the i-th of updateModes.
func verticalScaler(i int) *v1alpha1.VerticalScaler {
	return &v1alpha1.VerticalScaler{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VerticalScaler"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workNamespace, Name: fmt.Sprintf("web-%d", i)},
		Spec:       v1alpha1.VerticalScalerSpec{DeploymentName: fmt.Sprintf("web-%d", i), UpdateMode: updateModes[i%len(updateModes)]}}
}

// configMap is the i-th ConfigMap with data of version n.
func configMap(i, n int) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workNamespace, Name: fmt.Sprintf("config-%d", i)},
		Data:       map[string]string{"VERSION": fmt.Sprint(n)}}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// apply writes obj by server-side apply as the capture's field manager.
func (cp *capture) apply(ctx context.Context, obj client.Object, opts ...client.ApplyOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		u = &unstructured.Unstructured{}
		if err := convert(obj, &u.Object); err != nil {
			return err
		}
	}
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	opts = append(opts, client.FieldOwner(fieldManager), client.ForceOwnership)
	if err := cp.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), client.ObjectKeyFromObject(u), err)
	}
	return nil
}

// convert copies from into to through JSON.
func convert(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}
