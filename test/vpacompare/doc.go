// Package vpacompare holds the test that feeds the same usage traces to the verticalscaler's
// recommender and to the Vertical Pod Autoscaler recommender's own model code
// (k8s.io/autoscaler/vertical-pod-autoscaler), and compares their recommendations. It is a Go
// module of its own, so that the manager's go.mod does not carry the VPA and its dependencies;
// `make test` runs it. The verticalscaler weighs each CPU sample by the container's request
// (max(request, 0.1 core)), which the VPA stopped doing in v1.4.0: a trace whose samples carry
// requests is compared with the VPA's model fed the same weights through its own histogram.
// Its package tools checks, against a manager, what reads the VPA's objects.
package vpacompare
