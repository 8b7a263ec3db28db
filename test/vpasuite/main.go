// Command vpasuite runs the Vertical Pod Autoscaler's own end-to-end suite (the v1 specs of
// vertical-pod-autoscaler/test/e2e in a kubernetes/autoscaler checkout) against Switchboard's
// verticalscaler and verticalpodautoscaler controllers, on the local cluster of `make run`.
//
// The VPA runs each of its suites (recommender, updater, admission-controller, actuation,
// full-vpa) with only the components that suite is about: the admission-controller suite, for
// one, runs without a recommender and writes the recommendations its specs need into the VPAs'
// status itself. Switchboard is all three components in one process, so the runner starts its
// manager afresh for each suite, with the flags that leave out what the VPA leaves out (see
// managerArgs), and runs the suite's binary, built inside the checkout because its go.mod
// replaces the VPA module with the checkout's own.
//
// The cluster's Pods are kwok's, so the manager runs as a process beside the cluster with the
// admin's kubeconfig.
//
// Usage:
//
//	vpasuite run --vpa-dir=DIR [--suites=recommender,...] [--baseline=results.json] ...
//	vpasuite compare BASELINE.json RESULTS.json
//
// `make test-vpa` runs it (docs/migrating/from-vpa.md says how).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/example/switchboard/internal/suitereport"
)

func main() {
	if err := dispatch(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vpasuite:", err)
		os.Exit(1)
	}
}

func dispatch(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: vpasuite run --vpa-dir=DIR [flags] | vpasuite compare BASELINE.json RESULTS.json")
	}
	switch args[0] {
	case "run":
		return run(args[1:])
	case "compare":
		if len(args) != 3 {
			return errors.New("usage: vpasuite compare BASELINE.json RESULTS.json")
		}
		results, err := suitereport.Read(args[2])
		if err != nil {
			return err
		}
		return suitereport.CompareWith(args[1], results)
	}
	return fmt.Errorf("unknown command %q: run or compare", args[0])
}
