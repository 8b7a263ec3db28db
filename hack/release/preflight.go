package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// semver is a release version as tags name it: v, then MAJOR.MINOR.PATCH, then an optional
// pre-release such as -rc.1 (semver.org, with Go's and Helm's leading v on the tag).
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// preflight is what must hold before a release is cut: the checkout is the commit to tag, and
// every place that names the version names this one.
type preflight struct {
	dir           string
	version       string
	bundleVersion string
}

func bindPreflight(fs *flag.FlagSet) func(context.Context, io.Reader, io.Writer) error {
	var p preflight
	fs.StringVar(&p.dir, "dir", ".", "the repository's root")
	fs.StringVar(&p.version, "version", "", "the version to release, vMAJOR.MINOR.PATCH[-PRERELEASE]")
	fs.StringVar(&p.bundleVersion, "bundle-version", "", "the OLM bundle's version (the Makefile's BUNDLE_VERSION)")
	return func(ctx context.Context, _ io.Reader, stdout io.Writer) error {
		if !semver.MatchString(p.version) {
			return badArgumentf("--version=%q: want vMAJOR.MINOR.PATCH, optionally with a -PRERELEASE suffix", p.version)
		}
		problems := p.problems(ctx)
		if len(problems) > 0 {
			return fmt.Errorf("%s cannot be released from %s yet:\n  - %s", p.version, p.dir, strings.Join(problems, "\n  - "))
		}
		fmt.Fprintf(stdout, "%s: the checkout is clean, untagged, and every version in it is %s\n", p.version, p.version)
		return nil
	}
}

// problems returns every reason the release cannot be cut, so that one run lists them all.
func (p preflight) problems(ctx context.Context) []string {
	bare := strings.TrimPrefix(p.version, "v")
	var problems []string
	add := func(err error) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				problems = append(problems, e.Error())
			}
		} else if err != nil {
			problems = append(problems, err.Error())
		}
	}
	add(p.cleanCheckout(ctx))
	add(p.untagged(ctx))
	add(p.changelogHasSection(bare))
	add(p.chartVersions(bare))
	add(p.manifestImageTag())
	if p.bundleVersion != bare {
		add(fmt.Errorf("BUNDLE_VERSION is %q, want %q (set it in the Makefile and run make bundle)", p.bundleVersion, bare))
	}
	return problems
}

// cleanCheckout refuses uncommitted or untracked files: the tag must name what was built.
func (p preflight) cleanCheckout(ctx context.Context) error {
	out, err := git(ctx, p.dir, "status", "--porcelain")
	if err != nil {
		return err
	}
	if out != "" {
		return fmt.Errorf("the checkout has changes that are not committed:\n%s", indent(out))
	}
	return nil
}

// untagged refuses a version that is already tagged: a release is cut once.
func (p preflight) untagged(ctx context.Context) error {
	out, err := git(ctx, p.dir, "tag", "--list", p.version)
	if err != nil {
		return err
	}
	if out != "" {
		return fmt.Errorf("the tag %s exists already", p.version)
	}
	return nil
}

// changelogHasSection requires CHANGELOG.md to say what the release changes, under a heading
// of Keep a Changelog's form: "## [1.2.3] - 2026-12-05".
func (p preflight) changelogHasSection(bare string) error {
	data, err := os.ReadFile(filepath.Join(p.dir, "CHANGELOG.md"))
	if err != nil {
		return fmt.Errorf("reading the changelog: %w", err)
	}
	heading := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(bare) + `\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	if !heading.Match(data) {
		return fmt.Errorf("CHANGELOG.md has no section \"## [%s] - YYYY-MM-DD\": move the Unreleased entries under it", bare)
	}
	return nil
}

// chartVersions requires the chart to be the release's: version without the v, appVersion
// (the image tag it installs by default) with it.
func (p preflight) chartVersions(bare string) error {
	data, err := os.ReadFile(filepath.Join(p.dir, "charts", "switchboard", "Chart.yaml"))
	if err != nil {
		return fmt.Errorf("reading the chart: %w", err)
	}
	var chart struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		return fmt.Errorf("reading charts/switchboard/Chart.yaml: %w", err)
	}
	var errs []error
	if chart.Version != bare {
		errs = append(errs, fmt.Errorf("charts/switchboard/Chart.yaml: version is %q, want %q", chart.Version, bare))
	}
	if chart.AppVersion != p.version {
		errs = append(errs, fmt.Errorf("charts/switchboard/Chart.yaml: appVersion is %q, want %q", chart.AppVersion, p.version))
	}
	return errors.Join(errs...)
}

// managerImage is the image reference of config/manager's Deployment.
var managerImage = regexp.MustCompile(`(?m)^\s+image:\s*(\S+)\s*$`)

// manifestImageTag requires config/manager to name the release's image tag, so that `make
// deploy` without IMG installs the release.
func (p preflight) manifestImageTag() error {
	path := filepath.Join(p.dir, "config", "manager", "manager.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the manager's manifest: %w", err)
	}
	m := managerImage.FindSubmatch(data)
	if m == nil {
		return errors.New("config/manager/manager.yaml names no image")
	}
	if !strings.HasSuffix(string(m[1]), ":"+p.version) {
		return fmt.Errorf("config/manager/manager.yaml: image is %s, want the tag %s", m[1], p.version)
	}
	return nil
}

// git runs git in dir and returns its trimmed stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// indent prefixes each line of s with four spaces.
func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
