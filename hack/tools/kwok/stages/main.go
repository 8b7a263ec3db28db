// Command stages prints the kwok Stages of the local cluster as one multi-document YAML stream,
// taken from the kwok module this module pins, so that the stages always match the kwok binary
// built next to them. kwok refuses to start without stages.
//
// The set is the one kwokctl runs by default: Nodes become Ready at once and renew their
// Leases (without the heartbeat kube-controller-manager would mark them NotReady after about
// 40 s and evict their Pods), Pods become Ready at once, Job Pods complete, deleted Pods go.
package main

import (
	"fmt"
	"os"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	heartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{
		nodefast.DefaultNodeInit,
		heartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, doc := range docs {
		docs[i] = strings.TrimSuffix(doc, "\n") + "\n"
	}
	if _, err := fmt.Print(strings.Join(docs, "---\n")); err != nil {
		fmt.Fprintln(os.Stderr, "writing stages:", err)
		os.Exit(1)
	}
}
