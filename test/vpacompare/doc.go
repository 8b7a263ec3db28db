// Package vpacompare holds the test that feeds the same usage traces to the verticalscaler's
// recommender and to the Vertical Pod Autoscaler recommender's own model code
// (k8s.io/autoscaler/vertical-pod-autoscaler), and compares their recommendations. It is a Go
// module of its own, so that the manager's go.mod does not carry the VPA and its dependencies;
// `make test` runs it.
package vpacompare
