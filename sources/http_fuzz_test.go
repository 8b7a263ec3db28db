package sources

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzDecodeTargets feeds arbitrary bodies to the trigger's decoder: it must never panic, and
// whatever it accepts must be a non-empty list of valid names that survives a round trip. The
// seed corpus is in testdata/fuzz/FuzzDecodeTargets; run with
// `go test ./sources/ -run '^$' -fuzz FuzzDecodeTargets -fuzztime 60s`.
func FuzzDecodeTargets(f *testing.F) {
	f.Add([]byte(`{"namespace":"a","name":"b"}`))
	f.Add([]byte(`[{"namespace":"a","name":"b"},{"namespace":"c","name":"d.e"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		targets, err := DecodeTargets(body)
		if err != nil {
			if len(err.Error()) > 2*maxErrorLen+200 {
				t.Errorf("error message of %d bytes", len(err.Error()))
			}
			return
		}
		if len(targets) == 0 {
			t.Fatal("accepted a body that names nothing")
		}
		for _, target := range targets {
			if len(validation.IsDNS1123Label(target.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(target.Name)) > 0 {
				t.Errorf("accepted invalid target %+v", target)
			}
		}
		encoded, err := json.Marshal(targets)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeTargets(encoded)
		if err != nil {
			t.Fatalf("re-encoded targets %s rejected: %v", encoded, err)
		}
		if diff := cmp.Diff(targets, again); diff != "" {
			t.Errorf("round trip (-first +second):\n%s", diff)
		}
	})
}
