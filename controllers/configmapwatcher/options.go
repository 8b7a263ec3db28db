package configmapwatcher

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultReloadDebounce is --reload-debounce's default: the gaps between a helm upgrade's
// changes, made as fast as a client makes them, are mostly shorter, and a single change, which
// waits it out, still reaches the Pod template within the latency target (docs/performance.md
// has BenchmarkDebounce's measurements). A longer delay missed that target.
const DefaultReloadDebounce = 20 * time.Millisecond

// DefaultDigestKeySecret is the name of the digest key Secret in the manager's namespace.
const DefaultDigestKeySecret = "switchboard-config-digest-key"

// Options are the configmapwatcher's own flags, shared by the rows of its group. Its table
// rows bind them with the manager's and validate them before anything starts.
type Options struct {
	// ReloaderAnnotations: honour Stakater Reloader's annotations as well as ours.
	ReloaderAnnotations bool
	// ReloadDebounce is Settings.Debounce.
	ReloadDebounce time.Duration
	// DigestKeySecret is NAME or NAMESPACE/NAME of the digest key Secret; the namespace
	// defaults to the manager's.
	DigestKeySecret string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		// Reloader's annotations are honoured, so that replacing Reloader needs no manifest
		// change.
		ReloaderAnnotations: true,
		ReloadDebounce:      DefaultReloadDebounce,
		DigestKeySecret:     DefaultDigestKeySecret,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.ReloaderAnnotations, "reloader-annotations", o.ReloaderAnnotations, "Make the configmapwatcher honour Stakater Reloader's annotations (reloader.stakater.com/auto, .../search and .../match, .../ignore, configmap.reloader.stakater.com/reload, ...) as well as app.example.com/reload.")
	fs.DurationVar(&o.ReloadDebounce, "reload-debounce", o.ReloadDebounce, "How long the configmapwatcher waits after a ConfigMap or Secret change before reading the workloads' data, so that changes made together roll a workload once; 0 reads at once.")
	fs.StringVar(&o.DigestKeySecret, "config-digest-key-secret", o.DigestKeySecret, "The Secret, NAME or NAMESPACE/NAME, holding the key of the configmapwatcher's digests, created with a random key when missing; the namespace defaults to the manager's ($POD_NAMESPACE, else the ServiceAccount's, else --leader-election-namespace, else 'default').")
}

// Validate says what is wrong with the options, naming the flag.
func (o *Options) Validate() error {
	if o.ReloadDebounce < 0 {
		return fmt.Errorf("--reload-debounce must not be negative, got %s", o.ReloadDebounce)
	}
	// Any valid namespace stands in for the manager's, which is known only at start.
	_, err := o.digestKeySecret(metaDefaultNamespace)
	return err
}

// metaDefaultNamespace stands in for the manager's namespace where only the form of
// --config-digest-key-secret is checked.
const metaDefaultNamespace = "default"

// Settings resolves the options for a manager running in managerNamespace. Call Validate
// first: it reports what this assumes valid.
func (o *Options) Settings(managerNamespace string) Settings {
	secret, _ := o.digestKeySecret(managerNamespace)
	return Settings{ReloaderAnnotations: o.ReloaderAnnotations, Debounce: o.ReloadDebounce, DigestKeySecret: secret}
}

// digestKeySecret resolves --config-digest-key-secret: NAME or NAMESPACE/NAME, the namespace
// being managerNamespace by default.
func (o *Options) digestKeySecret(managerNamespace string) (types.NamespacedName, error) {
	value := o.DigestKeySecret
	if value == "" {
		value = DefaultDigestKeySecret
	}
	namespace, name, qualified := strings.Cut(value, "/")
	if !qualified {
		namespace, name = managerNamespace, value
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return types.NamespacedName{}, fmt.Errorf("--config-digest-key-secret: %q is not a namespace name: %s", namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return types.NamespacedName{}, fmt.Errorf("--config-digest-key-secret: %q is not a Secret name: %s", name, strings.Join(errs, "; "))
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, nil
}
