package localcluster

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
)

// resizeStagesFile is where Start writes the kwok Stages that play the kubelet's part in an
// in-place resize, in the cluster's directory.
const resizeStagesFile = "kwok-resize-stages.yaml"

// jqQuantity is a jq function that reads a Kubernetes quantity (a number, or a string such as
// "250m", "1.5", "300Mi", "2G") as a number of base units (cores, bytes).
const jqQuantity = `def quantity: if type == "number" then . else ` +
	`(capture("^(?<n>[0-9.]+)(?<u>[a-zA-Z]*)$") | (.n | tonumber) * ` +
	`({"": 1, "m": 0.001, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 1024, "Mi": 1048576, "Gi": 1073741824, "Ti": 1099511627776}[.u])) end;`

// jqResizePending is a jq program that says "true" when a running Pod's spec asks its
// containers for other resources than the kubelet reports they run with: a resize, or a Pod
// whose resources the kubelet has not reported yet.
const jqResizePending = `([.spec.containers[] | {name, r: (.resources // {})}] | sort_by(.name)) != ` +
	`([.status.containerStatuses[]? | {name, r: (.resources // {})}] | sort_by(.name))`

// resizeStages returns the kwok Stages that play the kubelet's part in an in-place resize, on
// fake Nodes of the given allocatable resources. kwok's own Stages report no container
// resources, and the API server resizes only the Pods of a kubelet that reports them.
//
//   - pod-resize: a running Pod whose containers' spec resources differ from those its status
//     reports (a resize the API server admitted, or a Pod just started) gets them in its status
//     (resources, allocatedResources), its resize conditions dropped and its observedGeneration
//     set, as the kubelet reports a finished resize; its containers keep running, with their
//     restart counts.
//   - pod-resize-infeasible: one whose containers' requests add up to more than a Node's
//     allocatable gets PodResizePending with reason Infeasible instead, and keeps its resources.
//     The API server (1.37, its PodResizeValidator) refuses such a resize already, so kwok sees
//     one only when that admission plugin is off.
func resizeStages(allocatable corev1.ResourceList) string {
	cpu, memory := allocatable.Cpu().AsApproximateFloat64(), allocatable.Memory().AsApproximateFloat64()
	infeasible := fmt.Sprintf(`%s ([.spec.containers[].resources.requests.cpu // 0 | quantity] | add) > %g or `+
		`([.spec.containers[].resources.requests.memory // 0 | quantity] | add) > %g`, jqQuantity, cpu, memory)
	selector := fmt.Sprintf(`
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '%s'
      operator: 'In'
      values: ['true']
    - key: '%s'
      operator:`, jqResizePending, infeasible)
	return fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-resize
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:%s 'NotIn'
      values: ['true']
  next:
    statusTemplate: |
      {{ $root := . }}
      observedGeneration: {{ .metadata.generation }}
      conditions:
      {{ range .status.conditions }}{{ if and (ne .type "PodResizePending") (ne .type "PodResizeInProgress") }}
      - {{ . | toJson }}
      {{ end }}{{ end }}
      containerStatuses:
      {{ range $s := .status.containerStatuses }}{{ range $c := $root.spec.containers }}{{ if eq $c.name $s.name }}
      - {{ set (set (deepCopy $s) "resources" ($c.resources | default dict)) "allocatedResources" ($c.resources.requests | default dict) | toJson }}
      {{ end }}{{ end }}{{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-resize-infeasible
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:%s 'In'
      values: ['true']
    - key: '.status.conditions[]? | select(.type == "PodResizePending") | .reason'
      operator: 'NotIn'
      values: ['Infeasible']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range .status.conditions }}{{ if and (ne .type "PodResizePending") (ne .type "PodResizeInProgress") }}
      - {{ . | toJson }}
      {{ end }}{{ end }}
      - type: PodResizePending
        status: "True"
        reason: Infeasible
        message: "Node didn't have enough capacity: the Pod requests more than the Node's allocatable (cpu %g, memory %g bytes)"
        lastTransitionTime: {{ $now | Quote }}
`, selector, selector, cpu, memory)
}

// writeResizeStages writes resizeStages of the fake Nodes' allocatable to path.
func writeResizeStages(path string) error {
	if err := os.WriteFile(path, []byte(resizeStages(fakeNode("").Status.Allocatable)), 0o600); err != nil {
		return fmt.Errorf("writing the kwok resize stages: %w", err)
	}
	return nil
}
