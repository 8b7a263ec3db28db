// Package controllers is the controller table and the wiring of a manager from it.
//
// The table (Table) is explicit data: one row per pluggable controller with its name, whether it
// is enabled by default, its primary kind and the kinds it watches (with how: Owns, Maps,
// Uncached or OptionalInformer, and their predicates), the shared indexes and channel sources it needs, its own
// producers, and its reconciler. The row is the one record of what a controller watches: Wire
// builds each controller from its row, so no other code can say otherwise. Nothing registers
// itself from init(). --controllers selects rows with the kube-controller-manager convention;
// Wire then registers the union of the selected rows' indexes (each once), subscribes them to
// their sources, starts only the sources somebody consumes, adds one readiness check per
// controller, and builds each controller.
//
// This package imports every controller package, indexers and sources; no controller package
// imports this one (only their tests do, to start a manager the way main.go does). Removing a
// controller is removing its row.
package controllers
