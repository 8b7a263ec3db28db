package version

import (
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestGet(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := func() map[string]string {
		return map[string]string{"vcs.revision": "abc123", "vcs.time": "2026-01-02T03:04:05Z", "vcs.modified": "true"}
	}
	noVCS := func() map[string]string { return map[string]string{} }
	for _, tc := range []struct {
		name                     string
		version, revision, built string
		vcs                      func() map[string]string
		want                     Info
	}{
		{"stamped", "v1.2.3", "0123abcd", "2026-05-06T07:08:09Z", vcs,
			Info{Version: "v1.2.3", Revision: "0123abcd", BuildDate: "2026-05-06T07:08:09Z", GoVersion: runtime.Version(), Platform: platform}},
		{"stamped dirty", "v1.2.3-dirty", "0123abcd", "2026-05-06T07:08:09Z", noVCS,
			Info{Version: "v1.2.3-dirty", Revision: "0123abcd", BuildDate: "2026-05-06T07:08:09Z", GoVersion: runtime.Version(), Platform: platform}},
		{"go build with vcs stamping", "", "", "", vcs,
			Info{Version: "(devel)-dirty", Revision: "abc123", BuildDate: "2026-01-02T03:04:05Z", GoVersion: runtime.Version(), Platform: platform}},
		{"go build without", "", "", "", noVCS,
			Info{Version: "(devel)", Revision: Unknown, BuildDate: Unknown, GoVersion: runtime.Version(), Platform: platform}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, get(tc.version, tc.revision, tc.built, tc.vcs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCollector(t *testing.T) {
	info := Info{Version: "v1.2.3", Revision: "0123abcd", BuildDate: "2026-05-06T07:08:09Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	want := `# HELP switchboard_build_info Always 1; the labels say which build of the manager runs: its version, commit and Go version.
# TYPE switchboard_build_info gauge
switchboard_build_info{goversion="go1.26.8",revision="0123abcd",version="v1.2.3"} 1
`
	if err := testutil.CollectAndCompare(info.Collector(), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestString(t *testing.T) {
	info := Info{Version: "v1.2.3", Revision: "0123abcd", BuildDate: "2026-05-06T07:08:09Z", GoVersion: "go1.26.8", Platform: "linux/arm64"}
	want := "version: v1.2.3\ncommit: 0123abcd\nbuildDate: 2026-05-06T07:08:09Z\ngoVersion: go1.26.8\nplatform: linux/arm64\n"
	if diff := cmp.Diff(want, info.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
