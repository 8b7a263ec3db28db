package configmapwatcher_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/myapp"
	"github.com/example/switchboard/internal/testenv"
)

// The HTTP trigger feeds every controller; these tests run it through a real manager, with its
// flags, its self-signed certificate and the registry, as main.go wires it.

const triggerToken = "trigger-test-token"

// startWithTrigger starts a manager running controllers with the HTTP trigger on a free
// loopback port, and returns a function that POSTs body to /trigger/{controller} with token.
func startWithTrigger(t testing.TB, controllers string) func(controller, token, body string) int {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(triggerToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddress(t)
	env.StartManager(t, "--controllers="+controllers, "--trigger-bind-address="+addr, "--trigger-token-file="+tokenFile)
	// The certificate is self-signed, generated at start.
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	post := func(controller, token, body string) (int, error) {
		req, err := http.NewRequest(http.MethodPost, "https://"+addr+"/trigger/"+controller, strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	// The trigger listens once the manager has started its runnables.
	testenv.Eventually(t, timeout, func() error {
		_, err := post(controllers, "wrong", "{}")
		return err
	})
	return func(controller, token, body string) int {
		t.Helper()
		code, err := post(controller, token, body)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
}

func target(ns, name string) string {
	return fmt.Sprintf(`{"namespace": %q, "name": %q}`, ns, name)
}

// TestTriggerReconcilesTheNamedObject uses the one state no watch event brings back: myapp
// ignores status-only updates of a MyApp (its For predicate filters them), so a hand-edited
// status stays until something else reconciles that MyApp. A POST naming one of two tampered
// MyApps repairs that one and only that one.
func TestTriggerReconcilesTheNamedObject(t *testing.T) {
	post := startWithTrigger(t, myapp.ControllerName)
	ctx := context.Background()
	ns := env.Namespace(t, "cmw-")
	apps := map[string]*v1alpha1.MyApp{}
	for _, name := range []string{"named", "other"} {
		apps[name] = &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
		create(t, apps[name])
	}
	for _, app := range apps {
		waitPhase(t, app, v1alpha1.MyAppPending)
	}
	testenv.WaitQuiet(t, testenv.InProcess, settledOf(myapp.ControllerName, reconcileTotalOf(t, myapp.ControllerName), 0))

	for _, app := range apps {
		app.Status.Phase, app.Status.ReadyReplicas = v1alpha1.MyAppRunning, 1
		if err := env.Client.Status().Update(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	since := reconcileTotalOf(t, myapp.ControllerName)
	time.Sleep(time.Second)
	if got := reconcileTotalOf(t, myapp.ControllerName); got != since {
		t.Fatalf("a status-only update was reconciled (%v reconciles): the test needs it filtered", got-since)
	}

	if code := post(myapp.ControllerName, "wrong-token", target(ns, "named")); code != http.StatusUnauthorized {
		t.Errorf("POST with a wrong token answered %d, want 401", code)
	}
	if code := post(myapp.ControllerName, triggerToken, target(ns, "named")); code != http.StatusAccepted {
		t.Fatalf("POST answered %d, want 202", code)
	}
	waitPhase(t, apps["named"], v1alpha1.MyAppPending)
	testenv.WaitQuiet(t, testenv.InProcess, settledOf(myapp.ControllerName, since, 1))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(apps["other"]), apps["other"]); err != nil {
		t.Fatal(err)
	}
	if got := apps["other"].Status.Phase; got != v1alpha1.MyAppRunning {
		t.Errorf("the MyApp the POST did not name was reconciled: phase %q, want the tampered Running", got)
	}
}

func waitPhase(t *testing.T, app *v1alpha1.MyApp, phase v1alpha1.MyAppPhase) {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(app), app); err != nil {
			return err
		}
		if app.Status.Phase != phase || app.Status.ObservedGeneration != app.Generation {
			return fmt.Errorf("phase %q observedGeneration %d, want %q and %d", app.Status.Phase, app.Status.ObservedGeneration, phase, app.Generation)
		}
		return nil
	})
}

// TestTriggerBypassesForPredicates POSTs two Deployments the configmapwatcher's For predicate
// would drop: one without the reload annotation, and one with it, because the trigger's event
// carries only a namespace and a name, and the predicate would find no annotation on it.
// controller-runtime applies no predicate to a channel source, so both are reconciled; the
// Reconciler checks the opt-in itself, so neither is written.
func TestTriggerBypassesForPredicates(t *testing.T) {
	post := startWithTrigger(t, "configmapwatcher")
	ns := env.Namespace(t, "cmw-")
	create(t, configMap(ns, "settings", map[string]string{"k": "v1"}),
		deployment(ns, "opted-in", "true", envFrom("settings")), deployment(ns, "plain", "", envFrom("settings")))
	waitHashed(t, ns, nil, "opted-in")
	settle(t, reconcileTotal(t), 0)
	versions := resourceVersions(t, ns)
	writes := deploymentWrites(t)
	since := reconcileTotal(t)

	if code := post("configmapwatcher", triggerToken, "["+target(ns, "plain")+","+target(ns, "opted-in")+"]"); code != http.StatusAccepted {
		t.Fatalf("POST answered %d, want 202", code)
	}
	settle(t, since, 2)
	if got := reconcileTotal(t) - since; got != 2 {
		t.Errorf("%v reconciles after the POST, want 2", got)
	}
	if got := deploymentWrites(t) - writes; got != 0 {
		t.Errorf("%v writes to Deployments after the POST, want 0", got)
	}
	if diff := cmp.Diff(versions, resourceVersions(t, ns)); diff != "" {
		t.Errorf("Deployment resourceVersions (-before +after):\n%s", diff)
	}
}
