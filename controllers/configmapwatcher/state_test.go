package configmapwatcher

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/switchboard/internal/podrefs"
)

var (
	key      = newDigestKey([]byte("0123456789abcdef0123456789abcdef"))
	otherKey = newDigestKey([]byte("fedcba9876543210fedcba9876543210"))
)

func record(k *digestKey, sources map[string]map[string]string) *state {
	return &state{Version: stateVersion, KeyID: k.id, Sources: sources}
}

// outcome is what TestDecide compares of a decision: changes as Events say them, and the
// sources of the record it writes.
type outcome struct {
	Write, Roll, KeyChanged, Upgrade bool
	Changes, Deleted                 []string
	Record                           map[string]map[string]string
}

func outcomeOf(d decision) outcome {
	o := outcome{Write: d.write, Roll: d.roll, KeyChanged: d.keyChanged, Upgrade: d.upgrade, Deleted: d.deleted}
	for _, c := range d.changes {
		o.Changes = append(o.Changes, c.String())
	}
	if d.write {
		o.Record = d.record.Sources
	}
	return o
}

// TestDecide walks the record's rules: what a reconcile writes, rolls or leaves alone.
func TestDecide(t *testing.T) {
	app := map[string]string{"LOG_LEVEL": "d1", "TIMEOUT": "d2"}
	db := map[string]string{"password": "s1"}
	app9 := map[string]string{"LOG_LEVEL": "d9", "TIMEOUT": "d2"}
	base := record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": db})
	sources := func(s map[string]map[string]string) map[string]map[string]string { return s }
	for _, tc := range []struct {
		name           string
		recorded       *state
		observed       *state
		legacy         legacyHash
		reloadOnDelete bool
		want           outcome
	}{
		{"first sight: a baseline, no roll", nil, base, noLegacyHash, false, outcome{Write: true, Record: base.Sources}},
		{"first sight with a current legacy hash: a baseline", nil, base, legacyHashCurrent, false, outcome{Write: true, Record: base.Sources}},
		{"first sight with a stale legacy hash: one roll", nil, base, legacyHashStale, false, outcome{Write: true, Roll: true, Upgrade: true, Record: base.Sources}},
		{"the same record: nothing", base, record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": db}), noLegacyHash, false, outcome{}},
		{"another digest key: a new baseline, no roll", record(otherKey, base.Sources), base, noLegacyHash, false, outcome{Write: true, KeyChanged: true, Record: base.Sources}},
		{"a key changed", base,
			record(key, map[string]map[string]string{"ConfigMap/app": app9, "Secret/db": db}), noLegacyHash, false,
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: LOG_LEVEL changed"}, Record: sources(map[string]map[string]string{"ConfigMap/app": app9, "Secret/db": db})}},
		{"keys changed, added and removed in two sources", base,
			record(key, map[string]map[string]string{"ConfigMap/app": {"LOG_LEVEL": "d9", "NEW": "d3"}, "Secret/db": {"password": "s2"}}), noLegacyHash, false,
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: LOG_LEVEL changed, NEW added, TIMEOUT removed", "Secret db: password changed"},
				Record: map[string]map[string]string{"ConfigMap/app": {"LOG_LEVEL": "d9", "NEW": "d3"}, "Secret/db": {"password": "s2"}}}},
		{"a source deleted: no roll, nothing written, its digests kept", base,
			record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": nil}), noLegacyHash, false,
			outcome{Deleted: []string{"Secret/db"}}},
		{"a source deleted while another changed: the change rolls, the deleted one keeps its digests", base,
			record(key, map[string]map[string]string{"ConfigMap/app": app9, "Secret/db": nil}), noLegacyHash, false,
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: LOG_LEVEL changed"}, Deleted: []string{"Secret/db"},
				Record: map[string]map[string]string{"ConfigMap/app": app9, "Secret/db": db}}},
		{"a source deleted, --reload-on-delete: one roll, recorded as missing", base,
			record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": nil}), noLegacyHash, true,
			outcome{Write: true, Roll: true, Changes: []string{"Secret db: deleted"}, Record: map[string]map[string]string{"ConfigMap/app": app, "Secret/db": nil}}},
		{"a source missing before and now: other changes roll",
			record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": nil}),
			record(key, map[string]map[string]string{"ConfigMap/app": app9, "Secret/db": nil}), noLegacyHash, false,
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: LOG_LEVEL changed"}, Record: map[string]map[string]string{"ConfigMap/app": app9, "Secret/db": nil}}},
		{"a source missing before exists now: recorded, no roll (as Reloader without --reload-on-create)",
			record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": nil}), base, noLegacyHash, false,
			outcome{Write: true, Record: base.Sources}},
		{"a source tracked anew: recorded, no roll", record(key, map[string]map[string]string{"ConfigMap/app": app}), base, noLegacyHash, false,
			outcome{Write: true, Record: base.Sources}},
		{"a source tracked anew and missing: recorded as missing, no roll", base,
			record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": db, "ConfigMap/later": nil}), noLegacyHash, false,
			outcome{Write: true, Record: map[string]map[string]string{"ConfigMap/app": app, "Secret/db": db, "ConfigMap/later": nil}}},
		{"a source no longer tracked: dropped, no roll", base, record(key, map[string]map[string]string{"ConfigMap/app": app}), noLegacyHash, false,
			outcome{Write: true, Record: map[string]map[string]string{"ConfigMap/app": app}}},
		{"a whole-source digest changed", record(key, map[string]map[string]string{"ConfigMap/big": {wholeSource: "a"}}),
			record(key, map[string]map[string]string{"ConfigMap/big": {wholeSource: "b"}}), noLegacyHash, false,
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap big: data changed"}, Record: map[string]map[string]string{"ConfigMap/big": {wholeSource: "b"}}}},
		{"a source grew past the key limit with the same keys' values: counted as a change",
			record(key, map[string]map[string]string{"ConfigMap/big": {"a": "1"}}),
			record(key, map[string]map[string]string{"ConfigMap/big": {wholeSource: "b"}}), noLegacyHash, false,
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap big: data changed"}, Record: map[string]map[string]string{"ConfigMap/big": {wholeSource: "b"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := outcomeOf(decide(tc.recorded, tc.observed, tc.legacy, policy{reloadOnDelete: tc.reloadOnDelete}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideReloadOnCreate: with --reload-on-create, a source's creation rolls, whether it was
// recorded as missing or is new to the record because it was created while the manager
// watched; a source new to the record that existed before the manager started does not.
// TestDecideUnrecordedEvents: a workload's first record rolls it on what its sources had while
// it waited for that record, as a record's change would: a modification of a source it rolls
// on and that exists; a creation with --reload-on-create; a deletion with --reload-on-delete.
func TestDecideUnrecordedEvents(t *testing.T) {
	observed := record(key, map[string]map[string]string{"ConfigMap/app": {"k": "d1"}, "Secret/db": nil})
	for _, tc := range []struct {
		name   string
		events map[string]sourceEvents
		p      policy
		want   outcome
	}{
		{"none: a baseline", nil, policy{}, outcome{Write: true, Record: observed.Sources}},
		{"modified: one roll", map[string]sourceEvents{"ConfigMap/app": sourceModified}, policy{},
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: data changed"}, Record: observed.Sources}},
		{"created, modified: one roll", map[string]sourceEvents{"ConfigMap/app": sourceCreated | sourceModified}, policy{},
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: data changed"}, Record: observed.Sources}},
		{"created: a baseline", map[string]sourceEvents{"ConfigMap/app": sourceCreated}, policy{}, outcome{Write: true, Record: observed.Sources}},
		{"created, --reload-on-create: one roll", map[string]sourceEvents{"ConfigMap/app": sourceCreated}, policy{reloadOnCreate: true},
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: created"}, Record: observed.Sources}},
		{"deleted: a baseline", map[string]sourceEvents{"Secret/db": sourceDeleted}, policy{}, outcome{Write: true, Record: observed.Sources}},
		{"deleted, --reload-on-delete: one roll", map[string]sourceEvents{"Secret/db": sourceDeleted}, policy{reloadOnDelete: true},
			outcome{Write: true, Roll: true, Changes: []string{"Secret db: deleted"}, Record: observed.Sources}},
		{"modified but missing now, or not rolled on: a baseline", map[string]sourceEvents{"Secret/db": sourceModified, "ConfigMap/other": sourceModified}, policy{},
			outcome{Write: true, Record: observed.Sources}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.unrecorded = tc.events
			got := outcomeOf(decide(nil, observed, noLegacyHash, tc.p))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideEventsDuringFirstRecord: the events that came while the first record was written
// roll the workload at the next reconcile even when the data equals the record (the record
// took the new data, the Pods run the old); other events are the record's business, and a
// source the record sees changed rolls once.
func TestDecideEventsDuringFirstRecord(t *testing.T) {
	app := map[string]string{"k": "d1"}
	recorded := record(key, map[string]map[string]string{"ConfigMap/app": app})
	changed := record(key, map[string]map[string]string{"ConfigMap/app": {"k": "d2"}})
	for _, tc := range []struct {
		name     string
		observed *state
		events   map[string]sourceEvents
		want     outcome
	}{
		{"during the first record, data as recorded: one roll", recorded, map[string]sourceEvents{"ConfigMap/app": sourceModified | sourceDuringFirstRecord},
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: data changed"}, Record: recorded.Sources}},
		{"during the first record, data changed since: one roll", changed, map[string]sourceEvents{"ConfigMap/app": sourceModified | sourceDuringFirstRecord},
			outcome{Write: true, Roll: true, Changes: []string{"ConfigMap app: k changed"}, Record: changed.Sources}},
		{"before a record that exists: nothing", recorded, map[string]sourceEvents{"ConfigMap/app": sourceModified}, outcome{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := outcomeOf(decide(recorded, tc.observed, noLegacyHash, policy{unrecorded: tc.events}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideReloadOnCreate(t *testing.T) {
	app := map[string]string{"k": "d1"}
	db := map[string]string{"password": "s1"}
	withDB := record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": db})
	onCreate := func(created ...string) policy {
		return policy{reloadOnCreate: true, createdWhileWatching: func(key string) bool { return slices.Contains(created, key) }}
	}
	for _, tc := range []struct {
		name     string
		recorded *state
		p        policy
		want     outcome
	}{
		{"recorded as missing, created: one roll", record(key, map[string]map[string]string{"ConfigMap/app": app, "Secret/db": nil}), onCreate(),
			outcome{Write: true, Roll: true, Changes: []string{"Secret db: created"}, Record: withDB.Sources}},
		{"new to the record, created while watching: one roll", record(key, map[string]map[string]string{"ConfigMap/app": app}), onCreate("Secret/db"),
			outcome{Write: true, Roll: true, Changes: []string{"Secret db: created"}, Record: withDB.Sources}},
		{"new to the record, there before the manager: recorded, no roll", record(key, map[string]map[string]string{"ConfigMap/app": app}), onCreate(),
			outcome{Write: true, Record: withDB.Sources}},
		{"new to the record, created while watching, without the flag: recorded, no roll", record(key, map[string]map[string]string{"ConfigMap/app": app}),
			policy{createdWhileWatching: func(string) bool { return true }},
			outcome{Write: true, Record: withDB.Sources}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := outcomeOf(decide(tc.recorded, withDB, noLegacyHash, tc.p))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseState(t *testing.T) {
	s := record(key, map[string]map[string]string{"ConfigMap/app": {"k": "d"}, "Secret/gone": nil, "ConfigMap/empty": {}})
	got := parseState(s.String())
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got.Sources["Secret/gone"] != nil || got.Sources["ConfigMap/empty"] == nil {
		t.Errorf("a missing source must read back as nil and a source without keys as empty: %#v", got.Sources)
	}
	for _, value := range []string{"", "{", `{"v":2,"kid":"x","sources":{}}`, `{"v":1,"kid":"x"}`, "0123456789abcdef0123456789abcdef"} {
		if parseState(value) != nil {
			t.Errorf("parseState(%q) read a record; want none, so that the workload gets a baseline", value)
		}
	}
}

// TestDigestsAreKeyed: the record cannot be used to confirm a guess of a value without the
// key, equal values of two sources have different digests, and one digest covers a source that
// is taken whole and has many keys.
func TestDigestsAreKeyed(t *testing.T) {
	db := podrefs.Source{Kind: podrefs.Secret, Name: "db"}
	data := sourceData{bytes: map[string][]byte{"password": []byte("hunter2"), "user": []byte("admin")}, bytesField: "data"}
	got := key.digests(db, data, podrefs.Use{AllKeys: true})
	plain := sha256.Sum256([]byte("hunter2"))
	for _, guess := range []string{fmt.Sprintf("%x", plain), base64.RawURLEncoding.EncodeToString(plain[:12])} {
		if strings.HasPrefix(guess, got["password"]) || got["password"] == guess[:16] {
			t.Errorf("the digest of the password is an unkeyed hash of it: %s", got["password"])
		}
	}
	if other := otherKey.digests(db, data, podrefs.Use{AllKeys: true}); other["password"] == got["password"] {
		t.Error("two keys give the same digest")
	}
	if copyOf := key.digests(podrefs.Source{Kind: podrefs.Secret, Name: "db-copy"}, data, podrefs.Use{AllKeys: true}); copyOf["password"] == got["password"] {
		t.Error("the same value in two Secrets gives the same digest")
	}
	if diff := cmp.Diff([]string{"password"}, keysOf(key.digests(db, data, podrefs.Use{Keys: []string{"password", "absent"}}))); diff != "" {
		t.Errorf("keys recorded for a use by name (-want +got):\n%s", diff)
	}
	configMap := sourceData{strings: map[string]string{"k": "v"}, bytes: map[string][]byte{"b": {0}}, bytesField: "binaryData"}
	moved := sourceData{strings: map[string]string{"k": "v", "b": "\x00"}, bytesField: "binaryData"}
	cm := podrefs.Source{Kind: podrefs.ConfigMap, Name: "app"}
	if key.digests(cm, configMap, podrefs.Use{AllKeys: true})["b"] == key.digests(cm, moved, podrefs.Use{AllKeys: true})["b"] {
		t.Error("a key moved from binaryData to data keeps its digest")
	}
	many := sourceData{strings: map[string]string{}}
	for i := range maxKeysPerSource + 1 {
		many.strings[fmt.Sprintf("k%d", i)] = "v"
	}
	if whole := key.digests(cm, many, podrefs.Use{AllKeys: true}); len(whole) != 1 || whole[wholeSource] == "" {
		t.Errorf("a source of %d keys taken whole: %d digests, want one under %q", maxKeysPerSource+1, len(whole), wholeSource)
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestNoteOf(t *testing.T) {
	if got := noteOf([]string{"ConfigMap a: x changed", "Secret b: created"}); got != "ConfigMap a: x changed; Secret b: created" {
		t.Errorf("noteOf = %q", got)
	}
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("ConfigMap config-%03d: LOG_LEVEL changed", i))
	}
	got := noteOf(many)
	if len(got) > maxNote+20 || !strings.HasSuffix(got, " more") {
		t.Errorf("noteOf of 100 changes: %d bytes, %q", len(got), got[len(got)-30:])
	}
}
