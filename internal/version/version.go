// Package version says which build of the manager is running: the version, commit and build
// date stamped into the binary at link time, and the Go version it was built with. The
// Makefile stamps them from git with -ldflags -X (GO_BUILD_MANAGER), the same way for `make
// build`, `make image` and the Dockerfile; the build date is the commit's time, so that two
// builds of one commit are the same bytes.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set at link time: -X github.com/example/switchboard/internal/version.version=v1.2.3 and so on.
var (
	version   string
	revision  string
	buildDate string
)

// Info describes a build.
type Info struct {
	// Version is a semantic version: `git describe` of the newest v* tag, or a Go-style
	// pseudo-version (v0.0.0-<commit time>-<commit>) without one; "-dirty" ends it when the
	// tree had uncommitted changes.
	Version string
	// Revision is the full commit hash.
	Revision string
	// BuildDate is the commit's time, RFC 3339 in UTC.
	BuildDate string
	// GoVersion is the Go toolchain's version, such as go1.26.8.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// Unknown stands for what a build did not record.
const Unknown = "unknown"

// Get returns this binary's Info. Without the Makefile's stamps (`go build` or `go run` by
// hand), it falls back on what the Go toolchain recorded from git, when it did.
func Get() Info {
	return get(version, revision, buildDate, readVCS)
}

// get is Get with its inputs given, for tests.
func get(version, revision, buildDate string, vcs func() map[string]string) Info {
	info := Info{Version: version, Revision: revision, BuildDate: buildDate, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info.Version == "" || info.Revision == "" || info.BuildDate == "" {
		settings := vcs()
		if info.Revision == "" {
			info.Revision = settings["vcs.revision"]
		}
		if info.BuildDate == "" {
			info.BuildDate = settings["vcs.time"]
		}
		if info.Version == "" {
			info.Version = "(devel)"
			if settings["vcs.modified"] == "true" {
				info.Version += "-dirty"
			}
		}
	}
	for _, field := range []*string{&info.Revision, &info.BuildDate} {
		if *field == "" {
			*field = Unknown
		}
	}
	return info
}

// readVCS returns the vcs.* settings the Go toolchain records (unless -buildvcs=false).
func readVCS() map[string]string {
	out := map[string]string{}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, s := range bi.Settings {
		out[s.Key] = s.Value
	}
	return out
}

// String is what `manager --version` prints: one "key: value" line per field, YAML that
// scripts can read.
func (i Info) String() string {
	return fmt.Sprintf("version: %s\ncommit: %s\nbuildDate: %s\ngoVersion: %s\nplatform: %s\n", i.Version, i.Revision, i.BuildDate, i.GoVersion, i.Platform)
}

// KeysAndValues returns the fields as logr key/value pairs, for the manager's first log line.
func (i Info) KeysAndValues() []any {
	return []any{"version", i.Version, "commit", i.Revision, "buildDate", i.BuildDate, "goVersion", i.GoVersion, "platform", i.Platform}
}

// Collector returns the gauge switchboard_build_info{version,revision,goversion}, always 1, as
// Prometheus's own exporters publish their build: a dashboard joins on it to show which build
// each replica runs.
func (i Info) Collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "switchboard_build_info",
		Help:        "Always 1; the labels say which build of the manager runs: its version, commit and Go version.",
		ConstLabels: prometheus.Labels{"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion},
	})
	g.Set(1)
	return g
}
