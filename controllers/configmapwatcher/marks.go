package configmapwatcher

import (
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// Strategy is how a roll reaches a Pod template (--reload-strategy).
type Strategy string

// The strategies.
const (
	// StrategyConfigHash, ours and the default: a new v1alpha1.ConfigHashAnnotation, a keyed
	// digest of the whole record, in the Pod template's metadata, which the containers never see.
	StrategyConfigHash Strategy = "config-hash"
	// StrategyAnnotations is Reloader's annotations strategy: a new
	// v1alpha1.ReloaderLastReloadedFromAnnotation on the Pod template.
	StrategyAnnotations Strategy = "annotations"
	// StrategyEnvVars is Reloader's env-vars strategy (Reloader's default): a new value of the
	// variable STAKATER_<NAME>_<CONFIGMAP|SECRET> of each changed source, in the container that
	// uses it. The value is a keyed digest of the source's data, where Reloader puts a plain
	// SHA-1 of it, which anyone who may read the workload could test a guess of a Secret against.
	StrategyEnvVars Strategy = "env-vars"
)

// Strategies are the values --reload-strategy takes.
var Strategies = []Strategy{StrategyConfigHash, StrategyAnnotations, StrategyEnvVars}

// LastReloadedFrom says when a roll also writes Reloader's
// v1alpha1.ReloaderLastReloadedFromAnnotation (--last-reloaded-from), besides what the strategy
// writes: its users and their tools read it ("why did my Pod restart?", dashboards, Argo CD
// settings that ignore it).
type LastReloadedFrom string

// The values of --last-reloaded-from.
const (
	// LastReloadedFromReloader: when the workload opted in through Reloader's annotations (or
	// --auto-reload-all), whose users expect Reloader's marks.
	LastReloadedFromReloader LastReloadedFrom = "reloader"
	// LastReloadedFromAlways: on every roll.
	LastReloadedFromAlways LastReloadedFrom = "always"
	// LastReloadedFromNever: never, unless it is the strategy's own mark (annotations).
	LastReloadedFromNever LastReloadedFrom = "never"
)

// LastReloadedFromValues are the values --last-reloaded-from takes.
var LastReloadedFromValues = []LastReloadedFrom{LastReloadedFromReloader, LastReloadedFromAlways, LastReloadedFromNever}

// marks are what the configmapwatcher writes on a Pod template, and owns there: each changes
// only on a roll, and a write that does not roll sends each as it is (server-side apply removes
// an owned field left out, and removing a mark would roll the Pods).
type marks struct {
	// configHash is v1alpha1.ConfigHashAnnotation; "" for none.
	configHash string
	// lastReloadedFrom is v1alpha1.ReloaderLastReloadedFromAnnotation; "" for none.
	lastReloadedFrom string
	// env holds Reloader's variables, by container, then by name.
	env map[string]map[string]string
}

// marksOf reads the marks a Pod template carries: the config hash, Reloader's annotation and
// Reloader's variables of its containers, whoever wrote them (a write takes them over, as they
// are).
func marksOf(template *corev1.PodTemplateSpec) marks {
	m := marks{configHash: template.Annotations[v1alpha1.ConfigHashAnnotation],
		lastReloadedFrom: template.Annotations[v1alpha1.ReloaderLastReloadedFromAnnotation]}
	for _, c := range template.Spec.Containers {
		for _, env := range c.Env {
			if env.ValueFrom == nil && strings.HasPrefix(env.Name, v1alpha1.ReloaderEnvVarPrefix) {
				m.setEnv(c.Name, env.Name, env.Value)
			}
		}
	}
	return m
}

func (m *marks) setEnv(container, name, value string) {
	if m.env == nil {
		m.env = map[string]map[string]string{}
	}
	if m.env[container] == nil {
		m.env[container] = map[string]string{}
	}
	m.env[container][name] = value
}

// annotations are the marks' Pod template annotations; nil for none.
func (m marks) annotations() map[string]string {
	var out map[string]string
	for key, value := range map[string]string{v1alpha1.ConfigHashAnnotation: m.configHash, v1alpha1.ReloaderLastReloadedFromAnnotation: m.lastReloadedFrom} {
		if value == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = value
	}
	return out
}

// applyTo writes the marks into a Pod template, for a Job created from it.
func (m marks) applyTo(template *corev1.PodTemplateSpec) {
	if a := m.annotations(); a != nil {
		if template.Annotations == nil {
			template.Annotations = map[string]string{}
		}
		maps.Copy(template.Annotations, a)
	}
	for i := range template.Spec.Containers {
		c := &template.Spec.Containers[i]
		for _, name := range slices.Sorted(maps.Keys(m.env[c.Name])) {
			value := m.env[c.Name][name]
			if j := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }); j >= 0 {
				c.Env[j] = corev1.EnvVar{Name: name, Value: value}
			} else {
				c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
			}
		}
	}
}

// rollInput is what a roll's marks are made of.
type rollInput struct {
	strategy         Strategy
	lastReloadedFrom LastReloadedFrom
	// viaReloader: the workload opted in through Reloader's annotations (or --auto-reload-all).
	viaReloader bool
	namespace   string
	spec        *corev1.PodSpec
	refs        map[podrefs.Source]podrefs.Use
	d           decision
	key         *digestKey
	now         time.Time
}

// rolled returns the marks of a roll: the current ones, with the strategy's own changed.
func (m marks) rolled(in rollInput) marks {
	out := marks{configHash: m.configHash, lastReloadedFrom: m.lastReloadedFrom}
	for container, vars := range m.env {
		for name, value := range vars {
			out.setEnv(container, name, value)
		}
	}
	switch in.strategy {
	case StrategyEnvVars:
		for _, c := range in.d.changes {
			src := sourceOf(c.Source)
			container := in.carrier(src)
			if container == "" {
				continue
			}
			name := reloaderEnvVarName(src)
			// A variable already there, in whichever container, is the one to change.
			for other, vars := range out.env {
				if _, ok := vars[name]; ok {
					container = other
				}
			}
			out.setEnv(container, name, in.key.sourceHash(src, in.d.record.Sources[c.Source]))
		}
	case StrategyAnnotations:
		out.lastReloadedFrom = in.lastReloaded()
	default:
		out.configHash = in.key.configHash(in.d.record)
		if in.lastReloadedFrom == LastReloadedFromAlways || in.lastReloadedFrom == LastReloadedFromReloader && in.viaReloader {
			out.lastReloadedFrom = in.lastReloaded()
		}
	}
	return out
}

// carrier is the container Reloader would name for src: the one that uses it, or the first
// when the workload names it without using it.
func (in rollInput) carrier(src podrefs.Source) string {
	_, referenced := in.refs[src]
	return podrefs.Carrier(in.spec, src, !referenced)
}

// reloadSource is the value of v1alpha1.ReloaderLastReloadedFromAnnotation, in Reloader's
// shape and field order.
type reloadSource struct {
	Type          string   `json:"type"`
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace"`
	Hash          string   `json:"hash"`
	ContainerRefs []string `json:"containerRefs"`
	ObservedAt    int64    `json:"observedAt"`
}

// lastReloaded is Reloader's annotation for a roll: Reloader names the one source of its
// event; a roll here may have several (changes made together), and names the first.
func (in rollInput) lastReloaded() string {
	if len(in.d.changes) == 0 {
		return ""
	}
	key := in.d.changes[0].Source
	src := sourceOf(key)
	rs := reloadSource{Type: strings.ToUpper(string(src.Kind)), Name: src.Name, Namespace: in.namespace,
		Hash: in.key.sourceHash(src, in.d.record.Sources[key]), ContainerRefs: []string{}, ObservedAt: in.now.Unix()}
	if c := in.carrier(src); c != "" {
		rs.ContainerRefs = []string{c}
	}
	data, _ := json.Marshal(rs) // strings, a slice of strings and a number always encode
	return string(data)
}

// sourceOf reads a record's key ("ConfigMap/app") back into a source.
func sourceOf(key string) podrefs.Source {
	kind, name, _ := strings.Cut(key, "/")
	return podrefs.Source{Kind: podrefs.SourceKind(kind), Name: name}
}

// reloaderEnvVarName is Reloader's variable for src: STAKATER_, the name upper-cased with each
// run of other characters than letters and digits made one underscore (none before the first
// letter or digit), then _CONFIGMAP or _SECRET.
func reloaderEnvVarName(src podrefs.Source) string {
	var b strings.Builder
	b.WriteString(v1alpha1.ReloaderEnvVarPrefix)
	wroteValid := false
	for _, r := range strings.ToUpper(src.Name) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			wroteValid = true
			continue
		}
		if wroteValid {
			b.WriteByte('_')
			wroteValid = false
		}
	}
	b.WriteByte('_')
	b.WriteString(strings.ToUpper(string(src.Kind)))
	return b.String()
}

// sourceHash is the hash Reloader's marks carry for one source: a keyed digest of the source's
// record (nil: deleted), 40 hex digits as Reloader's SHA-1.
func (k *digestKey) sourceHash(src podrefs.Source, digests map[string]string) string {
	parts := [][]byte{[]byte("source-hash"), []byte(src.Key())}
	if digests == nil {
		parts = append(parts, []byte("deleted"))
	}
	for _, key := range slices.Sorted(maps.Keys(digests)) {
		parts = append(parts, []byte(key), []byte(digests[key]))
	}
	return hex.EncodeToString(k.mac(parts...)[:20])
}
