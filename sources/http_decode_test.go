package sources

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeTargets(t *testing.T) {
	long := strings.Repeat("a", 254)
	for _, tc := range []struct {
		body    string
		want    []Target
		wantErr string
	}{
		{body: ` {"namespace":"a","name":"b"} `, want: []Target{{"a", "b"}}},
		{body: `[{"namespace":"a","name":"b.c-d"},{"namespace":"e","name":"f"}]`, want: []Target{{"a", "b.c-d"}, {"e", "f"}}},
		{body: ``, wantErr: "body must be a JSON object"},
		{body: `"a/b"`, wantErr: "body must be a JSON object"},
		{body: `null`, wantErr: "body must be a JSON object"},
		{body: `[]`, wantErr: "empty list"},
		{body: `[null]`, wantErr: "[0].namespace: required"},
		{body: `{"namespace":"a","name":"b"}{}`, wantErr: "malformed JSON"},
		{body: `{"namespace":"a","name":"b","name":"c"}`, wantErr: `malformed request: duplicate field "name"`},
		{body: `{"namespace":"a","name":"b","x":1}`, wantErr: `malformed request: unknown field "x"`},
		{body: `{"namespace":"a","name":7}`, wantErr: "malformed JSON: name: wrong type number"},
		{body: `{"namespace":"a"}`, wantErr: "name: required"},
		{body: `{"namespace":"A","name":"b"}`, wantErr: "namespace: a lowercase RFC 1123 label"},
		{body: `{"namespace":"a.b","name":"b"}`, wantErr: "namespace: must not contain dots"},
		{body: `[{"namespace":"a","name":"b"},{"namespace":"a","name":"` + long + `"}]`, wantErr: "[1].name: must be no more than 253 characters"},
		{body: `{"namespace":"a","` + strings.Repeat("x", 1000) + `":1}`, wantErr: "..."},
	} {
		t.Run(tc.body[:min(len(tc.body), 40)], func(t *testing.T) {
			got, err := DecodeTargets([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if len(err.Error()) > maxErrorLen+100 {
					t.Errorf("error is %d bytes long", len(err.Error()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
