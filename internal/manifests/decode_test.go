package manifests

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecode(t *testing.T) {
	objs, err := Decode([]byte("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n---\n{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"b\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, obj := range objs {
		got = append(got, obj.GetKind()+"/"+obj.GetName())
	}
	if diff := cmp.Diff([]string{"ConfigMap/a", "Secret/b"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDecodeNamesTheBadDocument(t *testing.T) {
	for _, tc := range []struct{ data, wantErr string }{
		{"apiVersion: v1\nkind: ConfigMap\n---\nkind: [unclosed\n", "document 2"},
		// The YAML reader does not return an empty document, so it takes no number.
		{"apiVersion: v1\nkind: ConfigMap\n---\n---\nmetadata:\n  name: x\n", "document 2 has no apiVersion or kind"},
		{"apiVersion: v1\n", "document 1 has no apiVersion or kind"},
	} {
		_, err := Decode([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Decode(%q) error = %v, want one containing %q", tc.data, err, tc.wantErr)
		}
	}
}
