package configmapwatcher

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/example/switchboard/internal/podrefs"
)

// stateVersion is the version of the record this release writes. A record of another version
// is read as none: the workload gets a new baseline, without rolling.
const stateVersion = 1

// maxKeysPerSource bounds the keys recorded one by one for a source the workload takes whole:
// beyond it one digest covers the whole source (recorded under wholeSource), so that a large
// ConfigMap cannot outgrow the API server's limit on annotations (256 KiB for all of them).
const maxKeysPerSource = 64

// wholeSource is the record's key of the digest that covers a whole source; no key of a
// ConfigMap or Secret can be "*".
const wholeSource = "*"

// state is the record a workload carries in v1alpha1.ConfigStateAnnotation: per source it
// rolls on, per key it uses, a keyed digest of the value; nil for a source that did not exist.
type state struct {
	Version int `json:"v"`
	// KeyID identifies the digest key the digests were made with.
	KeyID string `json:"kid"`
	// Sources maps podrefs.Source.Key to the digests of its keys; nil when the source was
	// missing, empty when it had none of the keys used.
	Sources map[string]map[string]string `json:"sources"`
}

// parseState reads a record; nil for none, or for one it cannot read (another version, or
// edited by hand): either way the workload gets a new baseline.
func parseState(value string) *state {
	if value == "" {
		return nil
	}
	var s state
	if err := json.Unmarshal([]byte(value), &s); err != nil || s.Version != stateVersion || s.Sources == nil {
		return nil
	}
	return &s
}

// String encodes the record: JSON, keys sorted, so that an equal state is an equal string.
func (s *state) String() string {
	data, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("encoding a config state: %v", err)) // maps of strings always encode
	}
	return string(data)
}

// digestKey is the key of the keyed digests, and its id.
type digestKey struct {
	id     string
	secret []byte
}

// newDigestKey returns the key of secret. Its id is a hash of the key that tells keys apart
// without saying anything about them.
func newDigestKey(secret []byte) *digestKey {
	id := sha256.Sum256(append([]byte("switchboard config digest key id\x00"), secret...))
	return &digestKey{id: hex.EncodeToString(id[:4]), secret: secret}
}

// mac returns HMAC-SHA256 under the key of parts, each written with its length first, so that
// no two different lists of parts give the same input.
func (k *digestKey) mac(parts ...[]byte) []byte {
	h := hmac.New(sha256.New, k.secret)
	for _, p := range parts {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return h.Sum(nil)
}

// valueDigest is the record's digest of one key's value: 96 bits of the HMAC of the source, the
// map it is in (data or binaryData), the key and the value. The source's name is in it, so
// that equal values in two sources do not show as equal digests.
func (k *digestKey) valueDigest(src podrefs.Source, field, key string, value []byte) string {
	sum := k.mac([]byte("value"), []byte(src.Key()), []byte(field), []byte(key), value)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// configHash is the Pod template's ConfigHashAnnotation for a record: a new value rolls the
// Pods.
func (k *digestKey) configHash(s *state) string {
	return hex.EncodeToString(k.mac([]byte("config-hash"), []byte(s.String()))[:16])
}

// sourceData is the data of a ConfigMap (data and binaryData) or a Secret (data), for the
// length of one reconcile.
type sourceData struct {
	strings map[string]string
	bytes   map[string][]byte
	// bytesField names the map bytes come from: binaryData for a ConfigMap, data for a Secret.
	bytesField string
}

// digests returns the record of a source: the digest of each key use takes that the source
// has, or one digest of the whole source when use takes every key and there are more than
// maxKeysPerSource.
func (k *digestKey) digests(src podrefs.Source, d sourceData, use podrefs.Use) map[string]string {
	out := map[string]string{}
	keys := use.Keys
	if use.AllKeys {
		keys = slices.Sorted(maps.Keys(d.strings))
		keys = append(keys, slices.Sorted(maps.Keys(d.bytes))...)
		slices.Sort(keys)
		if len(keys) > maxKeysPerSource {
			var parts [][]byte
			for _, key := range keys {
				field, value, _ := d.get(key)
				parts = append(parts, []byte(field), []byte(key), value)
			}
			sum := k.mac(append([][]byte{[]byte("source"), []byte(src.Key())}, parts...)...)
			out[wholeSource] = base64.RawURLEncoding.EncodeToString(sum[:12])
			return out
		}
	}
	for _, key := range keys {
		if field, value, ok := d.get(key); ok {
			out[key] = k.valueDigest(src, field, key, value)
		}
	}
	return out
}

// get returns the map key is in, and its value.
func (d sourceData) get(key string) (string, []byte, bool) {
	if v, ok := d.strings[key]; ok {
		return "data", []byte(v), true
	}
	if v, ok := d.bytes[key]; ok {
		return d.bytesField, v, true
	}
	return "", nil, false
}

// decision is what a reconcile does with a workload, decided from its record and what it
// observed.
type decision struct {
	// write: apply record (and, when roll, a new config hash).
	write bool
	// record is the record to write: what was observed, except that a source of the record
	// deleted since keeps its digests unless the deletion rolls (see decide).
	record *state
	// roll: the data the workload uses changed since its record; changes say how.
	roll    bool
	changes []sourceChange
	// deleted are the sources of the record missing now whose deletion does not roll the
	// workload (--reload-on-delete is off).
	deleted []string
	// keyChanged: the record was made with another digest key, so it is replaced by a baseline.
	keyChanged bool
	// upgrade: the workload had no record but a config hash written by a release before
	// records, and the data no longer matches it.
	upgrade bool
}

// The ways a source can change.
const (
	changeChanged = "changed"
	changeCreated = "created"
	changeDeleted = "deleted"
)

// sourceChange is how one source changed since the record: the names of the keys, never their
// values.
type sourceChange struct {
	// Source is the record's key of the source, "ConfigMap/app".
	Source string
	// Change is changeChanged, changeCreated or changeDeleted.
	Change string
	// Changed, Added and Removed are the keys concerned, for changeChanged; all three are empty
	// when one digest covers the whole source (more than maxKeysPerSource keys).
	Changed, Added, Removed []string
}

// String says how a source changed, as Events and logs say it: "ConfigMap app: k changed, j
// added".
func (c sourceChange) String() string {
	what := c.Change
	if c.Change == changeChanged {
		var parts []string
		for _, group := range []struct {
			keys []string
			verb string
		}{{c.Changed, "changed"}, {c.Added, "added"}, {c.Removed, "removed"}} {
			if len(group.keys) > 0 {
				parts = append(parts, strings.Join(group.keys, ", ")+" "+group.verb)
			}
		}
		what = "data changed"
		if len(parts) > 0 {
			what = strings.Join(parts, ", ")
		}
	}
	return describe(c.Source) + ": " + what
}

// legacyHash says what a config hash of a release before records says of the current data.
type legacyHash int

const (
	// noLegacyHash: the Pod template has no config hash.
	noLegacyHash legacyHash = iota
	// legacyHashCurrent: the hash matches the current data (or cannot be checked, a ConfigMap
	// being missing).
	legacyHashCurrent
	// legacyHashStale: the data changed since the hash was written.
	legacyHashStale
)

// policy is what decide is told besides the records: Reloader's --reload-on-delete and
// --reload-on-create, and which sources were created while the manager watched.
type policy struct {
	reloadOnDelete, reloadOnCreate bool
	// createdWhileWatching says whether a source (by its record's key) was created after the
	// manager started: its creation is the event Reloader's --reload-on-create rolls on.
	createdWhileWatching func(key string) bool
	// unrecorded holds the events of sources (by their record's keys) while the workload was
	// watched and had no record yet: its first record rolls it on them as on a record's change,
	// and so does the next one on those that came while the first record was written.
	unrecorded map[string]sourceEvents
}

// decide compares what the workload's record says (nil: none) with what a reconcile observed:
//   - no record: a baseline, no roll, unless an older release's config hash says the data
//     changed since it was written, or a source was modified (or, with reloadOnCreate,
//     created; with reloadOnDelete, deleted) while the workload waited for its first record
//     (then one roll);
//   - a record made with another digest key: a new baseline, no roll;
//   - a source whose keys' digests changed: a roll;
//   - a source that was missing and exists now: with reloadOnCreate a roll, otherwise it is
//     recorded without one, as Reloader does;
//   - a source of the record deleted since: with reloadOnDelete a roll, the source recorded as
//     missing; otherwise no roll, and the record keeps its digests, so that it holds back no
//     other source's change and its return rolls only if its data differs;
//   - sources added or dropped (the workload's spec or annotations changed, or a source that
//     a pattern matches was created): a new record, no roll; with reloadOnCreate, a source
//     added because it was created while the manager watched rolls;
//   - the same record: nothing.
func decide(recorded, observed *state, legacy legacyHash, p policy) decision {
	switch {
	case recorded == nil && legacy == legacyHashStale:
		return decision{write: true, record: observed, roll: true, upgrade: true}
	case recorded == nil:
		d := decision{write: true, record: observed, changes: changesBeforeRecord(observed, p, false)}
		d.roll = len(d.changes) > 0
		return d
	case recorded.KeyID != observed.KeyID:
		return decision{write: true, record: observed, keyChanged: true}
	}
	record := &state{Version: observed.Version, KeyID: observed.KeyID, Sources: maps.Clone(observed.Sources)}
	var d decision
	for _, key := range slices.Sorted(maps.Keys(observed.Sources)) {
		now := observed.Sources[key]
		before, known := recorded.Sources[key]
		switch {
		case !known && now != nil && p.reloadOnCreate && p.createdWhileWatching != nil && p.createdWhileWatching(key):
			d.changes = append(d.changes, sourceChange{Source: key, Change: changeCreated})
		case !known:
			// Newly tracked: recorded as it is, without rolling.
		case now == nil && before != nil && p.reloadOnDelete:
			d.changes = append(d.changes, sourceChange{Source: key, Change: changeDeleted})
		case now == nil && before != nil:
			record.Sources[key] = before
			d.deleted = append(d.deleted, key)
		case now == nil:
			// Missing before and still missing.
		case before == nil && p.reloadOnCreate:
			d.changes = append(d.changes, sourceChange{Source: key, Change: changeCreated})
		case before == nil:
			// Created: recorded without rolling, as Reloader without --reload-on-create.
		default:
			if change, changed := keyChanges(key, before, now); changed {
				d.changes = append(d.changes, change)
			}
		}
	}
	for _, change := range changesBeforeRecord(observed, p, true) {
		if !slices.ContainsFunc(d.changes, func(c sourceChange) bool { return c.Source == change.Source }) {
			d.changes = append(d.changes, change)
		}
	}
	d.record = record
	d.roll = len(d.changes) > 0
	d.write = d.roll || recorded.String() != record.String()
	return d
}

// changesBeforeRecord are the changes that the events of p.unrecorded make of the sources observed
// at a workload's first record: a source that exists and was modified, or created with
// reloadOnCreate; one missing that was deleted, with reloadOnDelete. With duringFirstRecord, only
// the events that came while the first record was written count (the record exists now).
func changesBeforeRecord(observed *state, p policy, duringFirstRecord bool) []sourceChange {
	var changes []sourceChange
	for _, key := range slices.Sorted(maps.Keys(p.unrecorded)) {
		now, tracked := observed.Sources[key]
		events := p.unrecorded[key]
		switch {
		case !tracked, duringFirstRecord && events&sourceDuringFirstRecord == 0:
		case now != nil && events&sourceModified != 0:
			changes = append(changes, sourceChange{Source: key, Change: changeChanged})
		case now != nil && events&sourceCreated != 0 && p.reloadOnCreate:
			changes = append(changes, sourceChange{Source: key, Change: changeCreated})
		case now == nil && events&sourceDeleted != 0 && p.reloadOnDelete:
			changes = append(changes, sourceChange{Source: key, Change: changeDeleted})
		}
	}
	return changes
}

// describe turns a record's key ("ConfigMap/app") into how Events name the source.
func describe(key string) string { return strings.Replace(key, "/", " ", 1) }

// keyChanges says which keys of one source changed between two records, and whether any did.
func keyChanges(key string, before, now map[string]string) (sourceChange, bool) {
	change := sourceChange{Source: key, Change: changeChanged}
	if _, whole := now[wholeSource]; whole || before[wholeSource] != "" {
		return change, before[wholeSource] != now[wholeSource]
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if old, ok := before[k]; !ok {
			change.Added = append(change.Added, k)
		} else if old != now[k] {
			change.Changed = append(change.Changed, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if _, ok := now[k]; !ok {
			change.Removed = append(change.Removed, k)
		}
	}
	return change, len(change.Changed)+len(change.Added)+len(change.Removed) > 0
}
