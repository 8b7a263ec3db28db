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
	trigger := NewTrigger(t)
	e.StartManager(t, append([]string{"--controllers=" + controllers}, trigger.Args...)...)
	trigger.WaitServing(t)
	return func(controller, token, body string) int {
		t.Helper()
		code, _, err := trigger.Post(controller, token, body)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
}

// Trigger is the HTTP trigger of one manager: the flags that turn it on at a free loopback
// port with the token TriggerToken, and requests to it.
type Trigger struct {
	// Args are the manager's flags for the trigger.
	Args []string
	addr string
	// The certificate is self-signed, generated at start.
	client *http.Client
}

// NewTrigger returns a trigger for one manager: pass its Args to the manager.
func NewTrigger(t testing.TB) *Trigger {
	t.Helper()
	tr, err := NewTriggerIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// NewTriggerIn is NewTrigger for programs without a testing.T: the token file goes in dir.
func NewTriggerIn(dir string) (*Trigger, error) {
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(TriggerToken+"\n"), 0o600); err != nil {
		return nil, err
	}
	addr, err := LoopbackAddress()
	if err != nil {
		return nil, err
	}
	return &Trigger{
		Args:   []string{"--trigger-bind-address=" + addr, "--trigger-token-file=" + tokenFile},
		addr:   addr,
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}},
	}, nil
}

// Post POSTs body to /trigger/{controller} with token and returns the status code and body.
func (tr *Trigger) Post(controller, token, body string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, "https://"+tr.addr+"/trigger/"+controller, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := tr.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// WaitServing waits until the trigger answers: it listens once the manager has started its
// runnables.
func (tr *Trigger) WaitServing(t testing.TB) {
	t.Helper()
	Eventually(t, 20*time.Second, func() error {
		_, _, err := tr.Post("none", "wrong", "{}")
		return err
	})
}

// TriggerTarget is the body of a trigger request naming one object.
func TriggerTarget(namespace, name string) string {
	return fmt.Sprintf(`{"namespace": %q, "name": %q}`, namespace, name)
}
