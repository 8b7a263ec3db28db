package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// releasable writes a repository that can be released as v1.2.3, and commits it; change alters
// a file before the commit.
func releasable(t *testing.T, change func(dir string)) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	dir := t.TempDir()
	files := map[string]string{
		"CHANGELOG.md":                  "# Changelog\n\n## Unreleased\n\n## [1.2.3] - 2026-12-05\n\n- A change.\n",
		"charts/switchboard/Chart.yaml": "apiVersion: v2\nname: switchboard\nversion: 1.2.3\nappVersion: v1.2.3\n",
		"config/manager/manager.yaml":   "spec:\n  containers:\n      - name: manager\n        image: ghcr.io/example/switchboard:v1.2.3\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if change != nil {
		change(dir)
	}
	runIn(t, dir, "git", "init", "--quiet")
	runIn(t, dir, "git", "add", ".")
	runIn(t, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "release")
	return dir
}

// rewrite returns a change that replaces old with replacement in the file name.
func rewrite(t *testing.T, name, old, replacement string) func(string) {
	return func(dir string) {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%s has no %q", name, old)
		}
		if err := os.WriteFile(path, bytes.ReplaceAll(data, []byte(old), []byte(replacement)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPreflightNamesEveryProblem(t *testing.T) {
	tests := []struct {
		name          string
		change        func(dir string)
		after         func(dir string) // after the commit
		bundleVersion string
		want          []string // a piece of each problem, in order
	}{
		{name: "releasable", bundleVersion: "1.2.3"},
		{
			name:          "changelog without the section",
			change:        rewrite(t, "CHANGELOG.md", "## [1.2.3] - 2026-12-05", "## [1.2.2] - 2026-11-01"),
			bundleVersion: "1.2.3",
			want:          []string{`CHANGELOG.md has no section "## [1.2.3] - YYYY-MM-DD"`},
		},
		{
			name: "chart and manifest of the last release",
			change: func(dir string) {
				rewrite(t, "charts/switchboard/Chart.yaml", "1.2.3", "1.2.2")(dir)
				rewrite(t, "config/manager/manager.yaml", "v1.2.3", "v1.2.2")(dir)
			},
			bundleVersion: "1.2.2",
			want: []string{
				`version is "1.2.2", want "1.2.3"`,
				`appVersion is "v1.2.2", want "v1.2.3"`,
				"image is ghcr.io/example/switchboard:v1.2.2, want the tag v1.2.3",
				`BUNDLE_VERSION is "1.2.2", want "1.2.3"`,
			},
		},
		{
			name:          "uncommitted change and an existing tag",
			bundleVersion: "1.2.3",
			after: func(dir string) {
				runIn(t, dir, "git", "tag", "v1.2.3")
				if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("draft"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"?? notes.txt", "the tag v1.2.3 exists already"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := releasable(t, tt.change)
			if tt.after != nil {
				tt.after(dir)
			}
			p := preflight{dir: dir, version: "v1.2.3", bundleVersion: tt.bundleVersion}
			got := p.problems(context.Background())
			if len(got) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant %d containing %q", strings.Join(got, "\n"), len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestPreflightRefusesAVersionThatIsNotSemver(t *testing.T) {
	for _, version := range []string{"", "1.2.3", "v1.2", "v01.2.3", "v1.2.3+build", "latest"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"preflight", "--version=" + version, "--dir=" + t.TempDir()}, nil, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "want vMAJOR.MINOR.PATCH") {
			t.Errorf("preflight --version=%q: exit %d, stderr %q; want 2 and the form of a version", version, code, stderr.String())
		}
	}
}

func TestPreflightPassesTheReleasableCheckout(t *testing.T) {
	dir := releasable(t, nil)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"preflight", "--version=v1.2.3", "--bundle-version=1.2.3", "--dir=" + dir}, nil, &stdout, &stderr)
	want := "v1.2.3: the checkout is clean, untagged, and every version in it is v1.2.3\n"
	if code != 0 || stdout.String() != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout.String(), stderr.String(), want)
	}
	if diff := cmp.Diff("", stderr.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}
