// Command reloadersuite runs Stakater Reloader's own end-to-end suite (test/e2e of a Reloader
// checkout: core, annotations, flags, advanced, argo, csi) against the configmapwatcher, or
// against Reloader itself for the baseline, on the local cluster of `make run`.
//
// The suite installs Reloader with `helm upgrade --install` and removes it with `helm
// uninstall`. reloadersuite puts itself on the suite's PATH as `helm`: the stand-in renders the
// chart with the suite's values, as Helm would, and applies its objects. With the subject
// switchboard it renders Switchboard's chart in place of Reloader's, with the same --set values
// (the chart reads Reloader's values under reloader.*, as a Reloader user's values file has
// them) after the migration page's values file. The cluster's Pods are kwok's, so the
// controller runs as a process beside the cluster, a child of the runner, with the rendered
// Deployment's arguments and environment and the permissions of its ServiceAccount (the admin
// impersonates it). The Deployment is named as the suite finds Reloader's
// (<release>-reloader).
//
// What else the suites look for and cannot run in kwok's Pods, the runner plays for both
// subjects alike: the Argo Rollouts controller (rollouts.go), and the Secrets Store CSI driver
// with Vault (csi.go; kwok runs the Vault Pod's commands as this program, invoked as `vault`).
//
// Usage:
//
//	reloadersuite run --reloader-dir=DIR [--subject=switchboard|reloader] [--suites=core,...] [--baseline=results.json] ...
//	reloadersuite compare BASELINE.json RESULTS.json
//
// `make test-reloader` runs it (docs/migrating/from-reloader.md says how).
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/example/switchboard/internal/suitereport"
)

func main() {
	switch filepath.Base(os.Args[0]) {
	case "helm":
		os.Exit(helmMain(os.Args[1:]))
	case "vault":
		os.Exit(vaultMain(os.Args[1:]))
	}
	if err := dispatch(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "reloadersuite:", err)
		os.Exit(1)
	}
}

func dispatch(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: reloadersuite run --reloader-dir=DIR [flags] | reloadersuite compare BASELINE.json RESULTS.json")
	}
	switch args[0] {
	case "run":
		return run(args[1:])
	case "compare":
		if len(args) != 3 {
			return errors.New("usage: reloadersuite compare BASELINE.json RESULTS.json")
		}
		results, err := suitereport.Read(args[2])
		if err != nil {
			return err
		}
		return suitereport.CompareWith(args[1], results)
	}
	return fmt.Errorf("unknown command %q: run or compare", args[0])
}
