// Package suiterun holds what the runners of other projects' end-to-end suites (test/reloadersuite,
// test/vpasuite) share: their flags for the local cluster, one run per output directory, and
// the go command run inside the other project's checkout.
package suiterun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/internal/localcluster"
	"github.com/example/switchboard/internal/manifests"
)

// BindClusterFlags binds the flags that say where the local cluster's programs are, with the
// paths `make` builds them to as defaults.
func BindClusterFlags(fs *flag.FlagSet, cfg *localcluster.Config) {
	fs.StringVar(&cfg.K8sBinDir, "k8s-bin-dir", filepath.Join("bin", "k8s"), "etcd, kube-apiserver, kube-controller-manager, kube-scheduler")
	fs.StringVar(&cfg.Kwok, "kwok", filepath.Join("bin", "kwok"), "kwok binary")
	fs.StringVar(&cfg.KwokStages, "kwok-stages", filepath.Join("bin", "kwok-stages.yaml"), "kwok Stages")
	fs.StringVar(&cfg.KwokMetrics, "kwok-metrics", filepath.Join("bin", "kwok-metrics.yaml"), "kwok's metrics configuration")
	fs.StringVar(&cfg.MetricsServer, "metrics-server", filepath.Join("bin", "metrics-server"), "metrics-server binary")
}

// AbsPaths makes the non-empty paths absolute, and those of cfg's programs: the suites run in
// the other project's checkout.
func AbsPaths(cfg *localcluster.Config, paths ...*string) error {
	for _, p := range append(paths, &cfg.K8sBinDir, &cfg.Kwok, &cfg.KwokStages, &cfg.KwokMetrics, &cfg.MetricsServer) {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	return nil
}

// LockDir takes dir for this run alone, so that a second run there cannot reset the first's
// cluster; closing the file it returns lets the next run in.
func LockDir(dir string) (*os.File, error) {
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("another run uses %s (%w): give another --out", dir, err)
	}
	return lock, nil
}

// Go runs the go command in dir, its output on this program's standard error.
func Go(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return nil
}

// StartCluster starts the local cluster of cfg in dir; the function it returns stops it.
func StartCluster(ctx context.Context, cfg localcluster.Config, dir string) (*localcluster.Cluster, func(), error) {
	// envtest logs through controller-runtime's logger; the cluster's own logs are in its directory.
	ctrllog.SetLogger(logr.Discard())
	fmt.Fprintln(os.Stderr, "Starting the local cluster")
	cfg.Dir = dir
	c, err := localcluster.Start(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the local cluster:", err)
		}
	}, nil
}

// Suites reads the comma-separated --suites list, each of them one of known.
func Suites(list string, known []string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("--suites: unknown suite %q; the suites are %s", s, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("--suites names no suite")
	}
	return out, nil
}

// JobPodsCompleteStage is the kwok Stage that completes a Job's Pods as soon as they run. The
// suites' Jobs run for minutes, as they would on a kubelet, and their specs check them while
// they run: Reloader's csi spec waits for a running Job Pod's mount to rotate, the VPA's
// recommender spec for a CronJob waits for its Pods to run and report usage.
const JobPodsCompleteStage = "pod-complete"

// WithoutStage writes the kwok Stages of stages, less the one named name, to dir, and returns
// the file.
func WithoutStage(stages, name, dir string) (string, error) {
	data, err := os.ReadFile(stages)
	if err != nil {
		return "", fmt.Errorf("reading kwok stages: %w", err)
	}
	docs, err := manifests.Decode(data)
	if err != nil {
		return "", fmt.Errorf("kwok stages %s: %w", stages, err)
	}
	var out []byte
	found := false
	for _, doc := range docs {
		if doc.GetKind() == "Stage" && doc.GetName() == name {
			found = true
			continue
		}
		y, err := yaml.Marshal(doc.Object)
		if err != nil {
			return "", err
		}
		out = append(append(out, "---\n"...), y...)
	}
	if !found {
		return "", fmt.Errorf("kwok stages %s have no Stage %s", stages, name)
	}
	path := filepath.Join(dir, "kwok-stages.yaml")
	return path, os.WriteFile(path, out, 0o644)
}
