package configmapwatcher_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
)

// TestDigestKey: the manager creates its digest key Secret where --config-digest-key-secret
// says; the record holds no Secret value nor an unkeyed hash of one; a restart with another
// key records a new baseline without rolling, and an Event says so.
func TestDigestKey(t *testing.T) {
	ctx := context.Background()
	keyNS := env.Namespace(t, "cmw-key-")
	flag := "--config-digest-key-secret=" + keyNS + "/digest-key"
	forEachKindInTurn(t, func(t *testing.T, k workloadKind, ns string) {
		first := env.StartManager(t, "--controllers=configmapwatcher", flag)
		create(t, secret(ns, "db", map[string]string{"password": "hunter2"}), k.workload(ns, "web", "true", secretEnvFrom("db")))
		before := k.waitRecorded(t, ns, "web")
		settle(t, reconcileTotal(t), 0)
		key := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: keyNS, Name: "digest-key"}, key); err != nil {
			t.Fatalf("the digest key Secret: %v", err)
		}
		if n := len(key.Data["key"]); n != 32 {
			t.Errorf("digest key of %d bytes, want 32", n)
		}
		plain := sha256.Sum256([]byte("hunter2"))
		for _, leak := range []string{"hunter2", base64.StdEncoding.EncodeToString([]byte("hunter2")), hex.EncodeToString(plain[:])[:16],
			base64.RawURLEncoding.EncodeToString(plain[:12])} {
			if strings.Contains(before["web"].Record, leak) {
				t.Errorf("the record %s holds %q, the Secret's value or an unkeyed hash of it", before["web"].Record, leak)
			}
		}
		first.Stop()

		// Someone deletes the key (or restores another): the next manager creates a new one.
		if err := env.Client.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		counter := k.countRolls(t, ns)
		env.StartManager(t, "--controllers=configmapwatcher", flag)
		k.waitEvent(t, ns, "web", v1alpha1.ReasonDigestKeyChanged, "without rolling")
		settle(t, reconcileTotal(t), 0)
		if got := counter.take(t, k, ns); len(got) > 0 {
			t.Errorf("rolls after the key changed: %v, want none", got)
		}
		after := k.states(t, ns)
		if after["web"].Record == before["web"].Record {
			t.Error("the record was not written again with the new key")
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: keyNS, Name: "digest-key"}, key); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: keyNS, Name: "digest-key"}}); err != nil {
			t.Fatal(err)
		}

		// And changes roll as before.
		updateSecret(t, ns, "db", map[string]string{"password": "hunter3"})
		k.waitRolled(t, ns, after, "web")
		if diff := cmp.Diff(map[string]int{"web": 1}, counter.take(t, k, ns)); diff != "" {
			t.Errorf("rolls after a change (-want +got):\n%s", diff)
		}
	})
}
