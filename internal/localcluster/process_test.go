package localcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWithKubeconfig: every process of the cluster gets the cluster's kubeconfig in KUBECONFIG,
// whatever the launcher's environment says, and the rest of that environment as it is.
func TestWithKubeconfig(t *testing.T) {
	const local = "/src/bin/cluster/kubeconfig"
	for _, tc := range []struct {
		name          string
		environ, want []string
	}{
		{"none exported", []string{"HOME=/home/you", "PATH=/usr/bin"}, []string{"HOME=/home/you", "PATH=/usr/bin", "KUBECONFIG=" + local}},
		{"another cluster's exported", []string{"KUBECONFIG=/home/you/.kube/prod", "HOME=/home/you"}, []string{"HOME=/home/you", "KUBECONFIG=" + local}},
		{"a list of files exported", []string{"KUBECONFIG=/a:/b", "KUBECONFIG_EXTRA=x"}, []string{"KUBECONFIG_EXTRA=x", "KUBECONFIG=" + local}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withKubeconfig(tc.environ, local)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
