// Package tools checks that what reads the Vertical Pod Autoscaler's objects keeps working once
// Switchboard writes them: the VPA's own Go client and types (what Goldilocks and other Go tools
// read VerticalPodAutoscalers with) and `kubectl describe vpa`. Its tests run a control plane
// with the VPA's CRDs and a manager with the verticalscaler group, through the test kit.
package tools
