package configmapwatcher

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// digestKeyField is the key of the digest key's Secret that holds it.
const digestKeyField = "key"

// digestKeyBytes is the size of a key the manager creates; shorter keys are refused below
// minDigestKeyBytes.
const (
	digestKeyBytes    = 32
	minDigestKeyBytes = 16
)

// DigestKeys reads the digest key from its Secret once per process, creating the Secret with a
// random key when it does not exist, and shares it among the workload controllers. Someone who
// may read a workload but not that Secret sees digests they cannot reproduce, so they cannot
// confirm a guess of a Secret's value from the record.
type DigestKeys struct {
	// Secret names the Secret, in the manager's own namespace.
	Secret types.NamespacedName
	// Reader reads the Secret from the API server (it is not cached).
	Reader client.Reader
	// Writer creates it.
	Writer client.Writer

	mu  sync.Mutex
	key *digestKey
}

// +kubebuilder:rbac:groups="",namespace=switchboard-system,resources=secrets,verbs=get,resourceNames=switchboard-config-digest-key
// +kubebuilder:rbac:groups="",namespace=switchboard-system,resources=secrets,verbs=create

// get returns the key: read, or created, on the first call that succeeds. Replicas that create
// it at the same moment all end with the one the API server kept.
func (k *DigestKeys) get(ctx context.Context) (*digestKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil {
		return k.key, nil
	}
	secret := &corev1.Secret{}
	err := k.Reader.Get(ctx, k.Secret, secret)
	if apierrors.IsNotFound(err) {
		secret, err = k.create(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the digest key Secret %s: %w", k.Secret, err)
	}
	value := secret.Data[digestKeyField]
	if len(value) < minDigestKeyBytes {
		return nil, fmt.Errorf("the digest key Secret %s has no %q of at least %d bytes", k.Secret, digestKeyField, minDigestKeyBytes)
	}
	k.key = newDigestKey(value)
	ctrl.LoggerFrom(ctx).Info("Read the config digest key", "secret", k.Secret.String(), "keyID", k.key.id)
	return k.key, nil
}

// create creates the Secret with a new random key, or reads the one another replica created
// first.
func (k *DigestKeys) create(ctx context.Context) (*corev1.Secret, error) {
	value := make([]byte, digestKeyBytes)
	if _, err := rand.Read(value); err != nil {
		return nil, fmt.Errorf("generating a digest key: %w", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.Secret.Namespace, Name: k.Secret.Name,
			Labels: map[string]string{"app.kubernetes.io/name": "switchboard", "app.kubernetes.io/component": Group}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{digestKeyField: value},
	}
	err := k.Writer.Create(ctx, secret)
	switch {
	case apierrors.IsAlreadyExists(err):
		secret = &corev1.Secret{}
		if err := k.Reader.Get(ctx, k.Secret, secret); err != nil {
			return nil, err
		}
		return secret, nil
	case err != nil:
		return nil, fmt.Errorf("creating: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the config digest key Secret", "secret", k.Secret.String())
	return secret, nil
}
