package configmapwatcher

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var keySecret = types.NamespacedName{Namespace: "switchboard-system", Name: "switchboard-config-digest-key"}

// TestDigestKeysCreateTheSecretOnce: replicas that find no key all create one at the same
// moment; the API server keeps one, and every replica ends up using it.
func TestDigestKeysCreateTheSecretOnce(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	// Every replica's Get happens before any Create, as when they start together.
	var gets sync.WaitGroup
	const replicas = 3
	gets.Add(replicas)
	racy := interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if apierrors.IsNotFound(err) {
				gets.Done()
				gets.Wait()
			}
			return err
		},
	})
	ids := make([]string, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			keys := &DigestKeys{Secret: keySecret, Reader: racy, Writer: racy}
			k, err := keys.get(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = k.id
		})
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Errorf("replicas use different keys: %v", ids)
		}
	}
	secret := &corev1.Secret{}
	if err := c.Get(context.Background(), keySecret, secret); err != nil {
		t.Fatal(err)
	}
	if n := len(secret.Data[digestKeyField]); n != digestKeyBytes {
		t.Errorf("the created key has %d bytes, want %d", n, digestKeyBytes)
	}
	if newDigestKey(secret.Data[digestKeyField]).id != ids[0] {
		t.Error("the replicas' key is not the Secret's")
	}
}

func TestDigestKeysRefuseAShortKey(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: keySecret.Namespace, Name: keySecret.Name},
		Data:       map[string][]byte{digestKeyField: []byte("short")},
	}).Build()
	keys := &DigestKeys{Secret: keySecret, Reader: c, Writer: c}
	if _, err := keys.get(context.Background()); err == nil || !strings.Contains(err.Error(), "at least 16 bytes") {
		t.Errorf("get = %v, want an error about the key's size", err)
	}
}
