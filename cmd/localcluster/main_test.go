package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTarget: the launcher names the local cluster it runs on, and says when the shell's
// KUBECONFIG names another that it does not use.
func TestTarget(t *testing.T) {
	const local = "/src/switchboard/bin/cluster/kubeconfig"
	for _, tc := range []struct {
		name, exported, want string
	}{
		{"no KUBECONFIG", "", "The samples and the manager go to the local cluster at https://127.0.0.1:40123 (kubeconfig " + local + ").\n"},
		{"the local cluster's", local, "The samples and the manager go to the local cluster at https://127.0.0.1:40123 (kubeconfig " + local + ").\n"},
		{"another cluster's", "/home/you/.kube/prod", "The samples and the manager go to the local cluster at https://127.0.0.1:40123 (kubeconfig " + local + ").\n" +
			"KUBECONFIG=/home/you/.kube/prod of this shell is not used; `make run RUN_KUBECONFIG=path` runs the manager on another cluster.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, target("https://127.0.0.1:40123", local, tc.exported)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
