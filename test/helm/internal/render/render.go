// Package render renders charts/switchboard as `helm install --dry-run` does, with the Helm SDK:
// for the chart's tests, and for the end-to-end tests, which apply what cmd/render writes.
package render

import (
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// KubeVersion is the cluster the chart is rendered for: the version the e2e tests run.
var KubeVersion = &chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}

// Load loads the chart from its directory.
func Load(chartDir string) (*chart.Chart, error) {
	c, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", chartDir, err)
	}
	return c, nil
}

// Install renders c as `helm install RELEASE CHART --namespace NAMESPACE --dry-run` does with
// values, the schema's checks included, for a cluster of KubeVersion, and returns the
// manifests, or Helm's error.
func Install(c *chart.Chart, release, namespace string, values map[string]any) (string, error) {
	r, err := InstallFor(c, release, namespace, values, Cluster{KubeVersion: KubeVersion})
	if err != nil {
		return "", err
	}
	return r.Manifest, nil
}

// Cluster is what Helm knows of the cluster it renders for, its .Capabilities.
type Cluster struct {
	// KubeVersion is the cluster's version, as --kube-version gives it.
	KubeVersion *chartutil.KubeVersion
	// APIVersions are the group versions and kinds ("group/version/Kind") the cluster serves,
	// as Helm lists them from discovery when it installs (action.GetVersionSet), added to Helm's
	// offline list as --api-versions adds them. Empty is `helm template` without a cluster,
	// which knows the group versions of its own client and no kind.
	APIVersions chartutil.VersionSet
}

// Rendered is what a release renders: its manifests and its notes.
type Rendered struct {
	Manifest, Notes string
}

// InstallFor is Install for the cluster k.
func InstallFor(c *chart.Chart, release, namespace string, values map[string]any, k Cluster) (Rendered, error) {
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = release, namespace
	inst.KubeVersion, inst.APIVersions = k.KubeVersion, k.APIVersions
	rel, err := inst.Run(c, values)
	if err != nil {
		return Rendered{}, err
	}
	return Rendered{Manifest: rel.Manifest, Notes: rel.Info.Notes}, nil
}
