// Package churn is the load of the reliability tests: a population of MyApps, opted-in
// Deployments, VerticalScalers, ConfigMaps and Secrets in one namespace, changed at random by
// an admin client (created, changed and deleted MyApps; data and labels of ConfigMaps and
// Secrets changed), with a record of every operation and of every source change, which the
// chaos test's invariants read. Usage changes by itself: kwok emulates a day of usage every
// ten minutes on the local cluster (hack/tools/kwok/metrics).
package churn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
)

// Config sizes the population.
type Config struct {
	// Namespace holds everything the churn makes; it must exist.
	Namespace string
	// ConfigMaps and Secrets are the sources: ConfigMap config-N has the keys A and B, Secret
	// secret-N the keys password and token.
	ConfigMaps, Secrets int
	// Readers are Deployments reader-N, opted in to the configmapwatcher, that take only key A
	// of config-(N mod ConfigMaps) and key password of secret-(N mod Secrets), by key
	// reference: a change of B or token must not roll them. They live through the whole run.
	Readers int
	// Apps is the number of MyApps kept alive; every other takes its environment from
	// config-(N mod ConfigMaps) (envFrom: every key), so that the configmapwatcher rolls its
	// Deployment too. The first StableApps of them are never deleted.
	Apps, StableApps int
	// ScaledEvery gives every ScaledEvery-th MyApp a VerticalScaler of its name (Auto mode for
	// every other one of those, Off for the rest); 0 for none.
	ScaledEvery int
	// Seed seeds the choice of operations.
	Seed uint64
}

// SourceKey is one key of a ConfigMap or Secret.
type SourceKey struct {
	// Kind is "ConfigMap" or "Secret".
	Kind, Name, Key string
}

// Change is one change of a source's data (Keys changed) or of its labels only (no Keys): the
// update was sent at Sent and answered at Answered, so the API server made it in between.
type Change struct {
	Sent, Answered time.Time
	Kind, Name     string
	Keys           []string
}

// Churn is the population and what was done to it.
type Churn struct {
	client client.Client
	cfg    Config

	mu       sync.Mutex
	random   *rand.Rand
	nextApp  int
	apps     []string // live MyApps, oldest first
	deleted  []string
	versions map[string]int // per source key, the version of its value
	ops      map[string]int
	changes  []Change
	uses     map[string][]SourceKey // per workload (Deployment name), the keys it takes
}

// New returns a churn over c; Setup creates the population.
func New(c client.Client, cfg Config) *Churn {
	return &Churn{
		client: c, cfg: cfg, random: rand.New(rand.NewPCG(cfg.Seed, 0xc4a05)),
		versions: map[string]int{}, ops: map[string]int{}, uses: map[string][]SourceKey{},
	}
}

// The keys of each kind of source.
var keysOf = map[string][]string{"ConfigMap": {"A", "B"}, "Secret": {"password", "token"}}

// Setup creates the sources, the readers and the first MyApps.
func (ch *Churn) Setup(ctx context.Context) error {
	for i := range ch.cfg.ConfigMaps {
		if err := ch.create(ctx, "configmap-create", ch.source("ConfigMap", configMapName(i))); err != nil {
			return err
		}
	}
	for i := range ch.cfg.Secrets {
		if err := ch.create(ctx, "secret-create", ch.source("Secret", secretName(i))); err != nil {
			return err
		}
	}
	for i := range ch.cfg.Readers {
		d := ch.reader(i)
		if err := ch.create(ctx, "reader-create", d); err != nil {
			return err
		}
	}
	for range ch.cfg.Apps {
		if err := ch.createApp(ctx); err != nil {
			return err
		}
	}
	return nil
}

func configMapName(i int) string { return fmt.Sprintf("config-%d", i) }
func secretName(i int) string    { return fmt.Sprintf("secret-%d", i) }

// ReaderName names reader i.
func ReaderName(i int) string { return fmt.Sprintf("reader-%d", i) }

func (ch *Churn) value(kind, name, key string) string {
	return fmt.Sprintf("%s-%s-%s-v%d", kind, name, key, ch.versions[kind+"/"+name+"/"+key])
}

// source returns a ConfigMap or Secret with its keys at their current versions.
func (ch *Churn) source(kind, name string) client.Object {
	meta := metav1.ObjectMeta{Namespace: ch.cfg.Namespace, Name: name}
	data := map[string]string{}
	for _, key := range keysOf[kind] {
		data[key] = ch.value(kind, name, key)
	}
	if kind == "Secret" {
		return &corev1.Secret{ObjectMeta: meta, StringData: data}
	}
	return &corev1.ConfigMap{ObjectMeta: meta, Data: data}
}

// reader returns Deployment reader-i, which takes key A of a ConfigMap and key password of a
// Secret.
func (ch *Churn) reader(i int) *appsv1.Deployment {
	name := ReaderName(i)
	cm, secret := configMapName(i%ch.cfg.ConfigMaps), secretName(i%ch.cfg.Secrets)
	ch.uses[name] = []SourceKey{{"ConfigMap", cm, "A"}, {"Secret", secret, "password"}}
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ch.cfg.Namespace, Name: name, Annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example.com/reader:v1",
					Env: []corev1.EnvVar{
						{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: "A"}}},
						{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "password"}}},
					},
				}}},
			},
		},
	}
}

// createApp creates the next MyApp, and its VerticalScaler when it gets one.
func (ch *Churn) createApp(ctx context.Context) error {
	ch.mu.Lock()
	n := ch.nextApp
	ch.nextApp++
	ch.mu.Unlock()
	name := fmt.Sprintf("app-%d", n)
	app := &v1alpha1.MyApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ch.cfg.Namespace, Name: name},
		Spec:       v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080},
	}
	if n%2 == 0 {
		cm := configMapName(n % ch.cfg.ConfigMaps)
		app.Spec.EnvFrom = []v1alpha1.ConfigMapEnvSource{{ConfigMapName: cm}}
		ch.mu.Lock()
		for _, key := range keysOf["ConfigMap"] {
			ch.uses[name] = append(ch.uses[name], SourceKey{"ConfigMap", cm, key})
		}
		ch.mu.Unlock()
	}
	if err := ch.create(ctx, "myapp-create", app); err != nil {
		return err
	}
	if ch.cfg.ScaledEvery > 0 && n%ch.cfg.ScaledEvery == 0 {
		mode := v1alpha1.UpdateModeOff
		if (n/ch.cfg.ScaledEvery)%2 == 1 {
			mode = v1alpha1.UpdateModeAuto
		}
		vs := &v1alpha1.VerticalScaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ch.cfg.Namespace, Name: name},
			Spec:       v1alpha1.VerticalScalerSpec{DeploymentName: name, UpdateMode: mode},
		}
		if err := ch.create(ctx, "verticalscaler-create", vs); err != nil {
			return err
		}
	}
	ch.mu.Lock()
	ch.apps = append(ch.apps, name)
	ch.mu.Unlock()
	return nil
}

func (ch *Churn) create(ctx context.Context, op string, obj client.Object) error {
	if err := ch.client.Create(ctx, obj); err != nil {
		return fmt.Errorf("%s %s: %w", op, obj.GetName(), err)
	}
	ch.count(op)
	return nil
}

func (ch *Churn) count(op string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.ops[op]++
}

// The operations Step chooses from, with their weights.
var operations = []struct {
	name   string
	weight int
}{
	{"myapp-create", 3}, {"myapp-update", 4}, {"myapp-delete", 3},
	{"configmap-data", 3}, {"secret-data", 2}, {"source-labels", 1},
}

// Step does one operation chosen at random: a MyApp created, changed (image or replicas) or
// deleted, a key of a ConfigMap or a Secret changed, or a source's labels changed. Deleting
// keeps Apps alive and never deletes a stable MyApp.
func (ch *Churn) Step(ctx context.Context) error {
	total := 0
	for _, op := range operations {
		total += op.weight
	}
	ch.mu.Lock()
	x := ch.random.IntN(total)
	ch.mu.Unlock()
	for _, op := range operations {
		if x -= op.weight; x >= 0 {
			continue
		}
		switch op.name {
		case "myapp-create":
			return ch.createApp(ctx)
		case "myapp-update":
			return ch.updateApp(ctx)
		case "myapp-delete":
			return ch.deleteApp(ctx)
		case "configmap-data":
			return ch.changeSource(ctx, "ConfigMap", configMapName(ch.intn(ch.cfg.ConfigMaps)), true)
		case "secret-data":
			return ch.changeSource(ctx, "Secret", secretName(ch.intn(ch.cfg.Secrets)), true)
		default:
			if ch.intn(2) == 0 {
				return ch.changeSource(ctx, "ConfigMap", configMapName(ch.intn(ch.cfg.ConfigMaps)), false)
			}
			return ch.changeSource(ctx, "Secret", secretName(ch.intn(ch.cfg.Secrets)), false)
		}
	}
	return nil
}

func (ch *Churn) intn(n int) int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.random.IntN(n)
}

// pickApp returns a live MyApp at random; from the non-stable ones when deletable.
func (ch *Churn) pickApp(deletable bool) (string, bool) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	candidates := ch.apps
	if deletable {
		candidates = slices.DeleteFunc(slices.Clone(ch.apps), func(name string) bool {
			n, _ := strconv.Atoi(name[len("app-"):])
			return n < ch.cfg.StableApps
		})
		if len(ch.apps) <= ch.cfg.Apps/2 {
			return "", false
		}
	}
	if len(candidates) == 0 {
		return "", false
	}
	return candidates[ch.random.IntN(len(candidates))], true
}

// updateApp changes a MyApp's image or replicas.
func (ch *Churn) updateApp(ctx context.Context) error {
	name, ok := ch.pickApp(false)
	if !ok {
		return nil
	}
	app := &v1alpha1.MyApp{}
	if err := ch.client.Get(ctx, types.NamespacedName{Namespace: ch.cfg.Namespace, Name: name}, app); err != nil {
		return fmt.Errorf("myapp-update %s: %w", name, err)
	}
	patch := client.MergeFrom(app.DeepCopy())
	if ch.intn(2) == 0 {
		app.Spec.Image = map[string]string{"nginx:1.27": "nginx:1.28", "nginx:1.28": "nginx:1.27"}[app.Spec.Image]
	} else {
		app.Spec.Replicas = 3 - app.Spec.Replicas // 1 <-> 2
	}
	if err := ch.client.Patch(ctx, app, patch); err != nil {
		return fmt.Errorf("myapp-update %s: %w", name, err)
	}
	ch.count("myapp-update")
	return nil
}

// deleteApp deletes a MyApp that is not stable, and its VerticalScaler, and makes a new one
// when fewer than Apps are alive.
func (ch *Churn) deleteApp(ctx context.Context) error {
	name, ok := ch.pickApp(true)
	if !ok {
		return ch.createApp(ctx)
	}
	meta := metav1.ObjectMeta{Namespace: ch.cfg.Namespace, Name: name}
	if err := ch.client.Delete(ctx, &v1alpha1.MyApp{ObjectMeta: meta}); err != nil {
		return fmt.Errorf("myapp-delete %s: %w", name, err)
	}
	if err := ch.client.Delete(ctx, &v1alpha1.VerticalScaler{ObjectMeta: meta}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("verticalscaler-delete %s: %w", name, err)
	}
	ch.mu.Lock()
	ch.apps = slices.DeleteFunc(ch.apps, func(n string) bool { return n == name })
	ch.deleted = append(ch.deleted, name)
	delete(ch.uses, name)
	ch.ops["myapp-delete"]++
	short := len(ch.apps) < ch.cfg.Apps
	ch.mu.Unlock()
	if short {
		return ch.createApp(ctx)
	}
	return nil
}

// changeSource changes one key of a source's data, chosen at random, or only its labels.
func (ch *Churn) changeSource(ctx context.Context, kind, name string, data bool) error {
	if !data {
		return ch.changeKey(ctx, kind, name, "")
	}
	ch.mu.Lock()
	key := keysOf[kind][ch.random.IntN(2)]
	ch.mu.Unlock()
	return ch.changeKey(ctx, kind, name, key)
}

// changeKey changes key of a source's data, or its labels only when key is empty.
func (ch *Churn) changeKey(ctx context.Context, kind, name, key string) error {
	data := key != ""
	var obj client.Object = &corev1.ConfigMap{}
	if kind == "Secret" {
		obj = &corev1.Secret{}
	}
	if err := ch.client.Get(ctx, types.NamespacedName{Namespace: ch.cfg.Namespace, Name: name}, obj); err != nil {
		return fmt.Errorf("changing %s %s: %w", kind, name, err)
	}
	op, change := "source-labels", Change{Kind: kind, Name: name}
	if data {
		ch.mu.Lock()
		ch.versions[kind+"/"+name+"/"+key]++
		value := ch.value(kind, name, key)
		ch.mu.Unlock()
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			o.Data[key] = value
		case *corev1.Secret:
			o.Data[key] = []byte(value)
		}
		op, change.Keys = strings.ToLower(kind)+"-data", []string{key}
	} else {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["touched"] = strconv.Itoa(ch.intn(1 << 30))
		obj.SetLabels(labels)
	}
	// An update, not a patch: a data change the API server accepts is exactly the one recorded.
	change.Sent = time.Now()
	if err := ch.client.Update(ctx, obj); err != nil {
		return fmt.Errorf("changing %s %s: %w", kind, name, err)
	}
	change.Answered = time.Now()
	ch.mu.Lock()
	ch.ops[op]++
	ch.changes = append(ch.changes, change)
	ch.mu.Unlock()
	return nil
}

// Ops returns how many operations of each kind were done.
func (ch *Churn) Ops() map[string]int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	out := map[string]int{}
	for k, v := range ch.ops {
		out[k] = v
	}
	return out
}

// Changes returns the source changes, in the order they were made.
func (ch *Churn) Changes() []Change {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return slices.Clone(ch.changes)
}

// Apps returns the live MyApps and the deleted ones.
func (ch *Churn) Apps() (live, deleted []string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return slices.Clone(ch.apps), slices.Clone(ch.deleted)
}

// Uses returns, per workload (Deployment) alive now, the source keys it takes.
func (ch *Churn) Uses() map[string][]SourceKey {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	out := map[string][]SourceKey{}
	for k, v := range ch.uses {
		out[k] = slices.Clone(v)
	}
	return out
}

// Stable says whether the workload lives through the whole run: a reader or a stable MyApp.
func (ch *Churn) Stable(workload string) bool {
	var n int
	if _, err := fmt.Sscanf(workload, "reader-%d", &n); err == nil {
		return true
	}
	if _, err := fmt.Sscanf(workload, "app-%d", &n); err == nil {
		return n < ch.cfg.StableApps
	}
	return false
}

// UsedKeys returns the source keys some workload of uses takes, each once, in a stable order.
func (ch *Churn) UsedKeys(uses map[string][]SourceKey) []SourceKey {
	var out []SourceKey
	for _, keys := range uses {
		for _, k := range keys {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.SortFunc(out, func(a, b SourceKey) int { return strings.Compare(a.Kind+a.Name+a.Key, b.Kind+b.Name+b.Key) })
	return out
}

// ChangeKey changes one key of a source, and records the change.
func (ch *Churn) ChangeKey(ctx context.Context, k SourceKey) error {
	return ch.changeKey(ctx, k.Kind, k.Name, k.Key)
}
