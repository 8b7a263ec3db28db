package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Reloader's csi suite, and the SecretProviderClass specs of its annotations suite, need the
// Secrets Store CSI driver with HashiCorp Vault's provider, and a Vault server: they write a
// secret with `vault kv put` in the Pod vault/vault-0, mount it in a Deployment through a
// SecretProviderClass, and wait for the driver's SecretProviderClassPodStatus to report a new
// version after they change the secret. None of these runs in kwok's Pods. The stand-ins here
// play what the suites see of them, so that the specs run for both subjects alike:
//
//   - the driver's CRDs (vendored in testdata/crds/secrets-store-csi-driver);
//   - Vault: the Pod vault/vault-0 (and the provider's DaemonSet, which the suites look for),
//     whose `vault` commands kwok runs on this machine (a ClusterExec) as this program, which
//     keeps the secrets in a file of the run's state;
//   - the driver: for each scheduled Pod that mounts a SecretProviderClass, a
//     SecretProviderClassPodStatus named and shaped as the driver's, with a version for each
//     object the class names, updated when the secret changes, as the driver's rotation does.

// The names the suites use (Reloader's test/e2e/utils/csi.go).
const (
	vaultNamespace    = "vault"
	vaultPodName      = "vault-0"
	vaultContainer    = "vault"
	vaultProviderName = "vault-csi-provider"
	// csiDriverName is the driver a Pod's CSI volume names to mount a SecretProviderClass.
	csiDriverName = "secrets-store.csi.k8s.io"
)

// envVaultStore names the file of the Vault stand-in's secrets, for the `vault` commands kwok
// runs.
const envVaultStore = "RELOADERSUITE_VAULT_STORE"

// rotationInterval is how often the driver stand-in reads the secrets again. The suites give
// the driver 10 s to report a change; the driver's own default poll is 2 minutes, and
// Reloader's e2e set-up runs it with a short one.
const rotationInterval = time.Second

var (
	secretProviderClassGVK = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClass"}
	providerStatusGVK      = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClassPodStatus"}
)

// vaultExecConfig is kwok's ClusterExec that runs the commands of vault/vault-0 on this
// machine, with the store's path in their environment. kwok finds `vault` on its PATH: the
// runner's shim directory.
func vaultExecConfig(store string) string {
	return fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: vault
spec:
  selector:
    matchNamespaces: [%s]
    matchNames: [%s]
  execs:
  - containers: [%s]
    local:
      envs:
      - name: %s
        value: %q
`, vaultNamespace, vaultPodName, vaultContainer, envVaultStore, store)
}

// vaultObjects are the Vault Pod and the provider's DaemonSet the suites look for. The
// DaemonSet's Pods are kwok's; nothing reads them.
func vaultObjects() []client.Object {
	labels := map[string]string{"app.kubernetes.io/name": vaultProviderName}
	container := corev1.Container{Name: vaultContainer, Image: "hashicorp/vault:stand-in"}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vaultNamespace}},
		&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: vaultProviderName, Namespace: vaultNamespace},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "provider", Image: "hashicorp/vault-csi-provider:stand-in"}}},
				},
			},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: vaultPodName, Namespace: vaultNamespace, Labels: map[string]string{"app.kubernetes.io/name": "vault"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{container}},
		},
	}
}

// setUpVault creates vaultObjects and waits for kwok to run vault-0, so that the suites can
// exec in it.
func setUpVault(ctx context.Context, c client.Client) error {
	for _, obj := range vaultObjects() {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the Vault stand-in's %T %s: %w", obj, obj.GetName(), err)
		}
	}
	var pod corev1.Pod
	var getErr error
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		getErr = c.Get(ctx, client.ObjectKey{Namespace: vaultNamespace, Name: vaultPodName}, &pod)
		return getErr == nil && pod.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		return fmt.Errorf("the Vault stand-in's Pod %s/%s is not Running (phase %q, %v): %w", vaultNamespace, vaultPodName, pod.Status.Phase, getErr, err)
	}
	return nil
}

// vaultSecrets are the Vault stand-in's secrets, by path as `vault kv` names them
// ("secret/name"), each a map of keys to values.
type vaultSecrets map[string]map[string]string

// vaultStore keeps vaultSecrets in a file that the `vault` commands and the driver stand-in
// share, locked while read or written.
type vaultStore struct{ path string }

// update changes the secrets under an exclusive lock of the file.
func (s vaultStore) update(change func(vaultSecrets)) error {
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	secrets, err := decodeSecrets(f)
	if err != nil {
		return err
	}
	change(secrets)
	data, err := json.Marshal(secrets)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	return err
}

// read returns the secrets, under a shared lock of the file.
func (s vaultStore) read() (vaultSecrets, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return vaultSecrets{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		return nil, err
	}
	return decodeSecrets(f)
}

func decodeSecrets(f *os.File) (vaultSecrets, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	secrets := vaultSecrets{}
	if info.Size() == 0 {
		return secrets, nil
	}
	data := make([]byte, info.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &secrets); err != nil {
		return nil, fmt.Errorf("the Vault stand-in's store %s: %w", f.Name(), err)
	}
	return secrets, nil
}

// vaultMain is this program run as `vault` by kwok in vault-0: the commands of Vault's CLI the
// suites run, `vault kv put PATH KEY=VALUE...` (the secret becomes those keys) and `vault kv
// metadata delete PATH` (the secret and its versions are gone; none is no error, as in Vault).
func vaultMain(args []string) int {
	err := vaultCommand(vaultStore{path: os.Getenv(envVaultStore)}, args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 2
	}
	return 0
}

func vaultCommand(store vaultStore, args []string) error {
	if store.path == "" {
		return errors.New(envVaultStore + " is not set: this is the Vault stand-in of reloadersuite, run by kwok in " + vaultNamespace + "/" + vaultPodName)
	}
	switch {
	case len(args) >= 4 && args[0] == "kv" && args[1] == "put":
		path, data := args[2], map[string]string{}
		for _, kv := range args[3:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("vault kv put %s: %q is not KEY=VALUE", path, kv)
			}
			data[k] = v
		}
		if err := store.update(func(s vaultSecrets) { s[path] = data }); err != nil {
			return err
		}
		fmt.Printf("Success! Data written to: %s\n", path)
		return nil
	case len(args) == 4 && args[0] == "kv" && args[1] == "metadata" && args[2] == "delete":
		if err := store.update(func(s vaultSecrets) { delete(s, args[3]) }); err != nil {
			return err
		}
		fmt.Printf("Success! Data deleted (if it existed) at: %s\n", args[3])
		return nil
	}
	return fmt.Errorf("the Vault stand-in runs `vault kv put PATH KEY=VALUE...` and `vault kv metadata delete PATH`, not `vault %s`", strings.Join(args, " "))
}

// providerObject is one entry of a Vault SecretProviderClass's parameters.objects.
type providerObject struct {
	ObjectName string `json:"objectName"`
	SecretPath string `json:"secretPath"`
	SecretKey  string `json:"secretKey"`
}

// objectVersions returns the version of each object a SecretProviderClass names, as the
// driver reports them in a status's objects (id and version): a hash of the object's content. KV version 2 paths
// (secret/data/NAME) read the secret `vault kv put` wrote at secret/NAME. An object whose
// secret or key is missing fails the mount, as in the driver.
func objectVersions(objectsParam string, secrets vaultSecrets) ([]any, error) {
	var objects []providerObject
	if err := yaml.Unmarshal([]byte(objectsParam), &objects); err != nil {
		return nil, fmt.Errorf("parameters.objects: %w", err)
	}
	versions := make([]any, 0, len(objects))
	for _, o := range objects {
		path := strings.Replace(o.SecretPath, "secret/data/", "secret/", 1)
		value, ok := secrets[path][o.SecretKey]
		if !ok {
			return nil, fmt.Errorf("no key %q in the secret at %s", o.SecretKey, path)
		}
		sum := sha256.Sum256([]byte(value))
		versions = append(versions, map[string]any{"id": o.ObjectName, "version": hex.EncodeToString(sum[:8])})
	}
	return versions, nil
}

// secretsStoreDriver plays the Secrets Store CSI driver with Vault's provider: it brings each
// mounting Pod's SecretProviderClassPodStatus to the versions of its objects. The statuses are
// owned by their Pods, so the garbage collector removes them with the Pods.
type secretsStoreDriver struct {
	c     client.WithWatch
	store vaultStore
}

// watchPods mounts each Pod a watch reports, until ctx is done.
func (d *secretsStoreDriver) watchPods(ctx context.Context, log *errorLog) {
	for ctx.Err() == nil {
		w, err := d.c.Watch(ctx, &corev1.PodList{})
		if err != nil {
			log.report(ctx, fmt.Errorf("watching Pods: %w", err))
			time.Sleep(rotationInterval)
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || len(mountedClasses(pod)) == 0 {
				continue
			}
			secrets, err := d.store.read()
			if err == nil {
				err = d.mountPod(ctx, pod, secrets)
			}
			log.report(ctx, err)
		}
		w.Stop()
	}
}

func (d *secretsStoreDriver) sync(ctx context.Context) error {
	var pods corev1.PodList
	if err := d.c.List(ctx, &pods); err != nil {
		return err
	}
	secrets, err := d.store.read()
	if err != nil {
		return err
	}
	var errs []error
	for i := range pods.Items {
		errs = append(errs, d.mountPod(ctx, &pods.Items[i], secrets))
	}
	return errors.Join(errs...)
}

// mountPod mounts the Pod's SecretProviderClasses if it is scheduled and not done.
func (d *secretsStoreDriver) mountPod(ctx context.Context, pod *corev1.Pod, secrets vaultSecrets) error {
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	var errs []error
	for _, m := range mountedClasses(pod) {
		if err := d.mount(ctx, pod, m, secrets); err != nil {
			errs = append(errs, fmt.Errorf("mounting SecretProviderClass %s in Pod %s/%s: %w", m.class, pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// csiMount is a CSI volume of the driver in a Pod: the volume's name and the
// SecretProviderClass it mounts.
type csiMount struct{ volume, class string }

// mountedClasses are the CSI volumes of the driver in the Pod.
func mountedClasses(pod *corev1.Pod) []csiMount {
	var mounts []csiMount
	for _, v := range pod.Spec.Volumes {
		if v.CSI == nil || v.CSI.Driver != csiDriverName {
			continue
		}
		if class := v.CSI.VolumeAttributes["secretProviderClass"]; class != "" {
			mounts = append(mounts, csiMount{volume: v.Name, class: class})
		}
	}
	return mounts
}

// mount creates or updates the Pod's SecretProviderClassPodStatus for m, named as the driver
// names it (POD-NAMESPACE-CLASS), with the versions of the class's objects.
func (d *secretsStoreDriver) mount(ctx context.Context, pod *corev1.Pod, m csiMount, secrets vaultSecrets) error {
	class := m.class
	spc := &unstructured.Unstructured{}
	spc.SetGroupVersionKind(secretProviderClassGVK)
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: class}, spc); err != nil {
		return err
	}
	objectsParam, _, err := unstructured.NestedString(spc.Object, "spec", "parameters", "objects")
	if err != nil {
		return err
	}
	objects, err := objectVersions(objectsParam, secrets)
	if err != nil {
		return err
	}
	name := pod.Name + "-" + pod.Namespace + "-" + class
	status := &unstructured.Unstructured{}
	status.SetGroupVersionKind(providerStatusGVK)
	err = d.c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, status)
	if apierrors.IsNotFound(err) {
		status = &unstructured.Unstructured{Object: map[string]any{
			"status": map[string]any{
				"podName":                 pod.Name,
				"secretProviderClassName": class,
				"mounted":                 true,
				"targetPath":              "/var/lib/kubelet/pods/" + string(pod.UID) + "/volumes/kubernetes.io~csi/" + m.volume + "/mount",
				"objects":                 objects,
			},
		}}
		status.SetGroupVersionKind(providerStatusGVK)
		status.SetNamespace(pod.Namespace)
		status.SetName(name)
		status.SetLabels(map[string]string{"internal.secrets-store.csi.k8s.io/node-name": pod.Spec.NodeName})
		status.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}})
		if err := d.c.Create(ctx, status); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	current, _, _ := unstructured.NestedSlice(status.Object, "status", "objects")
	if reflect.DeepEqual(current, objects) {
		return nil
	}
	if err := unstructured.SetNestedSlice(status.Object, objects, "status", "objects"); err != nil {
		return err
	}
	return d.c.Update(ctx, status)
}

// startSecretsStoreCSI creates the Vault stand-in's objects and starts the driver stand-in,
// which logs what it could not do to logPath. The returned function stops it.
func startSecretsStoreCSI(ctx context.Context, cfg *rest.Config, store, logPath string) (stop func(), err error) {
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	if err := setUpVault(ctx, c); err != nil {
		return nil, err
	}
	d := &secretsStoreDriver{c: c, store: vaultStore{path: store}}
	// Each Pod is mounted as soon as it is scheduled, before kwok reports it ready, as the
	// kubelet starts no container before its CSI volumes are mounted: a suite that finds a
	// Deployment ready then finds its Pods' statuses. Every mount is read again each
	// rotationInterval.
	return startStandIn(ctx, logPath, rotationInterval, d.sync, d.watchPods)
}

// secretsStoreCSIConfig writes the kwok configuration of the Vault stand-in to dir, and returns
// it and the store's path.
func secretsStoreCSIConfig(dir string) (kwokConfig, store string, err error) {
	store = filepath.Join(dir, "vault-secrets.json")
	kwokConfig = filepath.Join(dir, "kwok-vault-exec.yaml")
	return kwokConfig, store, os.WriteFile(kwokConfig, []byte(vaultExecConfig(store)), 0o644)
}
