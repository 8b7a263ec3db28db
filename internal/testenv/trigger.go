package testenv

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TriggerToken is the bearer token of the HTTP trigger that StartManagerWithTrigger starts.
const TriggerToken = "trigger-test-token"

// StartManagerWithTrigger starts a manager running controllers (a --controllers value) with the
// HTTP trigger on a free loopback port, through the same flags, self-signed certificate and
// registry as main.go, and returns a function that POSTs body to /trigger/{controller} with
// token and returns the status code. It returns once the trigger answers.
func (e *Env) StartManagerWithTrigger(t testing.TB, controllers string) func(controller, token, body string) int {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(TriggerToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddress(t)
	e.StartManager(t, "--controllers="+controllers, "--trigger-bind-address="+addr, "--trigger-token-file="+tokenFile)
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
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	// The trigger listens once the manager has started its runnables.
	Eventually(t, 20*time.Second, func() error {
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

// TriggerTarget is the body of a trigger request naming one object.
func TriggerTarget(namespace, name string) string {
	return fmt.Sprintf(`{"namespace": %q, "name": %q}`, namespace, name)
}
