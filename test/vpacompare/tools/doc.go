// Package tools checks that what reads the Vertical Pod Autoscaler's objects keeps working once
// Switchboard writes them: the VPA's own Go client and types (what Goldilocks and other Go tools
// read VerticalPodAutoscalers with), `kubectl describe vpa`, and kube-state-metrics' custom
// resource state metrics of VPAs (built by hack/tools/kube-state-metrics). Its tests run a
// control plane with the VPA's CRDs and a manager with the verticalscaler group, through the
// test kit.
package tools
