package loganalysis

import (
	"strings"
	"testing"
)

func TestFold(t *testing.T) {
	tests := []struct {
		name, msg, objName, objNamespace, want string
	}{
		{"API conflict", `updating status: Operation cannot be fulfilled on myapps.app.example.com "web": the object has been modified`, "web", "ns",
			`updating status: Operation cannot be fulfilled on myapps.app.example.com "*": the object has been modified`},
		{"the line's own name and namespace", `a Deployment named web already exists in ns/web.`, "web", "ns",
			`a Deployment named <name> already exists in <namespace>/<name>.`},
		{"a name equal to part of a word is left", `webhook failed`, "web", "", `webhook failed`},
		{"numbers, durations, addresses", `dial tcp 10.96.0.1:443: i/o timeout after 30s, 3 retries, 1.5ms`, "", "",
			`dial tcp <n>:<n>: i/o timeout after <n>, <n> retries, <n>`},
		{"UUIDs and hex", `uid a28f0c1e-1111-2222-3333-444455556666 and 9f86d081884c7d65 and 1e6b7c58-0000-0000-0000-000000000000`, "", "",
			`uid <uuid> and <hex> and <uuid>`},
		{"generated names", `pod web-7d9f8b6c4-x2x9z and node-12 and worker.3`, "", "", `pod <name> and <name> and <name>`},
		{"words with digits that are not variable", `v1alpha1 apps/v1 x509 k8s sha256 IPv4 abcdef`, "", "", `v1alpha1 apps/v1 x509 k8s sha256 IPv4 abcdef`},
		{"escaped quote inside a quoted string", `bad value "a\"b" here`, "", "", `bad value "*" here`},
		{"unterminated quote is kept", `bad value "abc`, "", "", `bad value "abc`},
		{"no name given", `a Deployment named web`, "", "", `a Deployment named web`},
		{"non-ASCII passes through", `échec: ünïcode 42`, "", "", `échec: ünïcode <n>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(fold(nil, []byte(tt.msg), []byte(tt.objName), []byte(tt.objNamespace)))
			if got != tt.want {
				t.Errorf("fold(%q) =\n  %q\nwant\n  %q", tt.msg, got, tt.want)
			}
		})
	}
}

func TestFoldIsBounded(t *testing.T) {
	long := strings.Repeat("word ", 1000)
	got := fold([]byte("prefix"), []byte(long), nil, nil)
	if len(got) != len("prefix")+maxFolded {
		t.Errorf("fold of %d bytes gave %d bytes after the prefix, want %d", len(long), len(got)-len("prefix"), maxFolded)
	}
}
