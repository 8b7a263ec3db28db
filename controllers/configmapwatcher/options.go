package configmapwatcher

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// DefaultReloadDebounce is --reload-debounce's default: the gaps between a helm upgrade's
// changes, made as fast as a client makes them, are mostly shorter, and a single change, which
// waits it out, still reaches the Pod template within the latency target (docs/performance.md
// has BenchmarkDebounce's measurements). A longer delay missed that target.
const DefaultReloadDebounce = 20 * time.Millisecond

// DefaultDigestKeySecret is the name of the digest key Secret in the manager's namespace.
const DefaultDigestKeySecret = "switchboard-config-digest-key"

// The values of --webhook-format.
const (
	// WebhookFormatJSON posts Notification as JSON.
	WebhookFormatJSON = "json"
	// WebhookFormatSlack posts {"text": "..."}, which Slack's incoming webhooks take (and
	// Mattermost's, Google Chat's and Rocket.Chat's).
	WebhookFormatSlack = "slack"
)

// Options are the configmapwatcher's own flags, shared by the rows of its group. Its table
// rows bind them with the manager's and validate them before anything starts. Where Stakater
// Reloader has a flag of the same meaning, the flag has Reloader's name; Reloader's other flags
// are accepted too (ReloaderFlags), so that its arguments do not stop the manager, and the
// manager says at start which of them it does not support.
type Options struct {
	// ReloaderAnnotations: honour Stakater Reloader's annotations as well as ours.
	ReloaderAnnotations bool
	// ReloadDebounce is Settings.Debounce.
	ReloadDebounce time.Duration
	// DigestKeySecret is NAME or NAMESPACE/NAME of the digest key Secret; the namespace
	// defaults to the manager's.
	DigestKeySecret string
	// AutoReloadAll is Reloader's --auto-reload-all: a workload that says nothing rolls on
	// every ConfigMap and Secret it references (see podrefs.Reading).
	AutoReloadAll bool
	// NamespaceSelector is Reloader's --namespace-selector: only namespaces whose labels match.
	NamespaceSelector string
	// NamespacesToIgnore is Reloader's --namespaces-to-ignore.
	NamespacesToIgnore []string
	// Namespaces is Reloader's --namespaces: the only namespaces the configmapwatcher looks at;
	// without it, Reloader's KUBERNETES_NAMESPACE environment variable names one.
	Namespaces []string
	// ResourceLabelSelector is Reloader's --resource-label-selector: only ConfigMaps and
	// Secrets whose labels match count.
	ResourceLabelSelector string
	// ResourcesToIgnore is Reloader's --resources-to-ignore: "configmaps" or "secrets".
	ResourcesToIgnore []string
	// ReloadOnDelete is Reloader's --reload-on-delete: the deletion of a source rolls.
	ReloadOnDelete bool
	// ReloadOnCreate is Reloader's --reload-on-create: the creation of a source rolls.
	ReloadOnCreate bool
	// EnableCSIIntegration is Reloader's --enable-csi-integration: workloads also roll on the
	// SecretProviderClasses (Secrets Store CSI driver) their Pods mount, when the versions the
	// driver reports in SecretProviderClassPodStatus objects change (see podrefs.Reading).
	EnableCSIIntegration bool
	// WebhookURL is Reloader's --webhook-url: each roll is posted there instead of being
	// made. Empty rolls.
	WebhookURL string
	// NotifyURL is where each roll is posted besides being made; empty posts nothing.
	NotifyURL string
	// WebhookFormat is WebhookFormatJSON or WebhookFormatSlack, for either URL.
	WebhookFormat string
	// MaxRolloutsPerMinute bounds the rolls started in any minute, over every workload kind;
	// 0 means no bound.
	MaxRolloutsPerMinute int
	// ReloaderNames are the names Reloader's annotations are read under: Reloader's, or those
	// its flags (--configmap-annotation, ...) rename them to.
	ReloaderNames podrefs.ReloaderNames
	// PausePeriodAnnotation and PausedAtAnnotation are the names of Reloader's pause
	// annotations (--pause-deployment-annotation, --pause-deployment-time-annotation).
	PausePeriodAnnotation, PausedAtAnnotation string
	// ReloadStrategy is Reloader's --reload-strategy, with ours, config-hash, as the default.
	ReloadStrategy Strategy
	// LastReloadedFrom says when a roll writes Reloader's last-reloaded-from annotation besides
	// the strategy's mark.
	LastReloadedFrom LastReloadedFrom

	// reloader holds Reloader's flags that have no counterpart of the same name here.
	reloader *reloaderFlags
	// namespaceSelector, resourceSelector are the parsed selectors; nil when not set.
	namespaceSelector, resourceSelector labels.Selector
	// ignoredNamespaces, ignoredKinds are --namespaces-to-ignore and --resources-to-ignore as
	// sets, made by Validate.
	ignoredNamespaces map[string]bool
	ignoredKinds      map[podrefs.SourceKind]bool
	// alerts are Reloader's ALERT_* variables.
	alerts AlertSettings
	// selectedNamespaces are the namespaces --namespace-selector selects, and
	// unselectedNamespaces the others, read by Prepare.
	selectedNamespaces, unselectedNamespaces []string
	// listedNamespaces are --namespaces, or KUBERNETES_NAMESPACE, and namespacesFrom says
	// which, made by Validate; nil for neither.
	listedNamespaces []string
	namespacesFrom   string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		// Reloader's annotations are honoured, so that replacing Reloader needs no manifest
		// change.
		ReloaderAnnotations:   true,
		ReloadDebounce:        DefaultReloadDebounce,
		DigestKeySecret:       DefaultDigestKeySecret,
		WebhookFormat:         WebhookFormatJSON,
		ReloaderNames:         podrefs.DefaultReloaderNames(),
		PausePeriodAnnotation: v1alpha1.ReloaderPausePeriodAnnotation,
		PausedAtAnnotation:    v1alpha1.ReloaderPausedAtAnnotation,
		ReloadStrategy:        StrategyConfigHash,
		LastReloadedFrom:      LastReloadedFromReloader,
		reloader:              newReloaderFlags(),
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.ReloaderAnnotations, "reloader-annotations", o.ReloaderAnnotations, "Make the configmapwatcher honour Stakater Reloader's annotations (reloader.stakater.com/auto, .../search and .../match, .../ignore, configmap.reloader.stakater.com/reload, ...) as well as app.example.com/reload.")
	fs.DurationVar(&o.ReloadDebounce, "reload-debounce", o.ReloadDebounce, "How long the configmapwatcher waits after a ConfigMap or Secret change before reading the workloads' data, so that changes made together roll a workload once; 0 reads at once.")
	fs.StringVar(&o.DigestKeySecret, "config-digest-key-secret", o.DigestKeySecret, "The Secret, NAME or NAMESPACE/NAME, holding the key of the configmapwatcher's digests, created with a random key when missing; the namespace defaults to the manager's ($POD_NAMESPACE, else the ServiceAccount's, else --leader-election-namespace, else 'default').")
	fs.BoolVar(&o.AutoReloadAll, "auto-reload-all", o.AutoReloadAll, "Roll every workload on the ConfigMaps and Secrets its Pod template references, unless it opts out with reloader.stakater.com/auto: \"false\" (configmap.reloader.stakater.com/auto or secret.reloader.stakater.com/auto for one kind) or app.example.com/reload: \"false\"; as Reloader's flag.")
	fs.StringVar(&o.NamespaceSelector, "namespace-selector", o.NamespaceSelector, "Only workloads and sources in namespaces whose labels match this selector (key=value or Reloader's key:value, key:* for any value, comma-separated); the manager restarts when the set of matching namespaces changes. As Reloader's flag.")
	fs.Var(listFlag{&o.Namespaces}, "namespaces", "Comma-separated namespaces, the only ones whose workloads, ConfigMaps and Secrets the configmapwatcher looks at; without it, the environment variable KUBERNETES_NAMESPACE names one. As Reloader's flag and variable; neither goes with --namespace-selector or --namespaces-to-ignore, which Reloader ignores then.")
	fs.Var(listFlag{&o.NamespacesToIgnore}, "namespaces-to-ignore", "Comma-separated namespaces whose workloads, ConfigMaps and Secrets the configmapwatcher neither caches nor watches; as Reloader's flag.")
	fs.StringVar(&o.ResourceLabelSelector, "resource-label-selector", o.ResourceLabelSelector, "Only ConfigMaps and Secrets whose labels match this selector (key=value or key:value, comma-separated) roll workloads; the others are neither watched nor recorded. As Reloader's flag.")
	fs.Var(listFlag{&o.ResourcesToIgnore}, "resources-to-ignore", "'configmaps' or 'secrets': that kind of source is neither watched nor read, and rolls nothing; as Reloader's flag.")
	fs.BoolVar(&o.ReloadOnDelete, "reload-on-delete", o.ReloadOnDelete, "Roll a workload when a ConfigMap or Secret it uses is deleted; otherwise a deletion gives a Warning Event and rolls nothing. As Reloader's flag.")
	fs.BoolVar(&o.EnableCSIIntegration, "enable-csi-integration", o.EnableCSIIntegration, "Also roll a workload when the secrets of a SecretProviderClass (Secrets Store CSI driver) its Pods mount change: the driver's SecretProviderClassPodStatus objects are watched, with Reloader's secretproviderclass annotations, as Reloader's flag. Needs the driver's CRDs; without them the manager says so at start and watches none.")
	fs.BoolVar(&o.ReloadOnCreate, "reload-on-create", o.ReloadOnCreate, "Roll a workload when a ConfigMap or Secret it rolls on is created: one it uses that was missing, or one new to it (a name its pattern matches) created while the manager runs; otherwise a creation is recorded without a roll. As Reloader's flag.")
	fs.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, "URL that each roll is posted to instead of being made, as Reloader's flag: the workload, its sources and the keys that changed (never values), with bounded retries; the record still moves on, so each change is posted once. Empty rolls.")
	fs.StringVar(&o.NotifyURL, "notify-url", o.NotifyURL, "URL that each roll is posted to besides being made (the same body as --webhook-url's), with bounded retries; empty posts nothing.")
	fs.StringVar(&o.WebhookFormat, "webhook-format", o.WebhookFormat, "Body of --webhook-url's and --notify-url's posts: 'json' (the notification) or 'slack' ({\"text\": ...}, for chat webhooks).")
	fs.Var(removedFlag{name: "webhook-only", instead: "--webhook-url now posts instead of rolling, as Reloader's flag; --notify-url posts and rolls"}, "webhook-only", "Removed: --webhook-url posts instead of rolling, as Reloader's flag; --notify-url posts and rolls.")
	for _, name := range o.annotationNames() {
		fs.StringVar(name.value, name.flag, *name.value, fmt.Sprintf("The name of Reloader's annotation %s, read instead of it; as Reloader's flag.", *name.value))
	}
	fs.Var(enumFlag[Strategy]{&o.ReloadStrategy, Strategies}, "reload-strategy", "How a roll reaches the Pod template: 'config-hash' (ours: a new app.example.com/config-hash annotation, a keyed digest in the template's metadata), or Reloader's 'annotations' (a new reloader.stakater.com/last-reloaded-from annotation) or 'env-vars' (a new value of the STAKATER_<NAME>_<CONFIGMAP|SECRET> variable of the container that uses the source, a keyed digest). Reloader's default is env-vars; ours config-hash, which the containers never see.")
	fs.Var(enumFlag[LastReloadedFrom]{&o.LastReloadedFrom, LastReloadedFromValues}, "last-reloaded-from", "When a roll also writes Reloader's reloader.stakater.com/last-reloaded-from on the Pod template: 'reloader' (when the workload opted in through Reloader's annotations or --auto-reload-all), 'always' or 'never'. With --reload-strategy=annotations it is the roll's mark and always written.")
	fs.IntVar(&o.MaxRolloutsPerMinute, "max-rollouts-per-minute", o.MaxRolloutsPerMinute, "Most rolls the configmapwatcher starts in any minute, over every workload kind; the others wait their turn and none is dropped. 0 means no limit.")
	o.reloader.addFlags(fs)
}

// Validate says what is wrong with the options, naming the flag.
func (o *Options) Validate() error {
	if o.ReloadDebounce < 0 {
		return fmt.Errorf("--reload-debounce must not be negative, got %s", o.ReloadDebounce)
	}
	// Any valid namespace stands in for the manager's, which is known only at start.
	if _, err := o.digestKeySecret(metaDefaultNamespace); err != nil {
		return err
	}
	var err error
	if o.namespaceSelector, err = reloaderSelector("--namespace-selector", o.NamespaceSelector); err != nil {
		return err
	}
	if o.resourceSelector, err = reloaderSelector("--resource-label-selector", o.ResourceLabelSelector); err != nil {
		return err
	}
	for _, ns := range o.NamespacesToIgnore {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--namespaces-to-ignore: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	for _, name := range o.annotationNames() {
		if errs := validation.IsQualifiedName(*name.value); len(errs) > 0 {
			return fmt.Errorf("--%s: %q is not an annotation name: %s", name.flag, *name.value, strings.Join(errs, "; "))
		}
	}
	o.ignoredNamespaces = setOf(o.NamespacesToIgnore)
	if err := o.listNamespaces(os.LookupEnv); err != nil {
		return err
	}
	if o.alerts, err = alertSettingsFromEnv(os.LookupEnv); err != nil {
		return err
	}
	if o.ignoredKinds, err = o.ignoredSources(); err != nil {
		return err
	}
	switch {
	case o.WebhookFormat != WebhookFormatJSON && o.WebhookFormat != WebhookFormatSlack:
		return fmt.Errorf("--webhook-format must be %s or %s, got %q", WebhookFormatJSON, WebhookFormatSlack, o.WebhookFormat)
	case o.WebhookURL != "" && o.NotifyURL != "":
		return errors.New("--webhook-url and --notify-url exclude each other: --webhook-url posts each roll instead of making it, --notify-url besides")
	case o.ReloadStrategy == StrategyAnnotations && o.LastReloadedFrom == LastReloadedFromNever:
		return errors.New("--last-reloaded-from=never and --reload-strategy=annotations exclude each other: that annotation is how the annotations strategy rolls")
	case o.MaxRolloutsPerMinute < 0:
		return fmt.Errorf("--max-rollouts-per-minute must not be negative, got %d", o.MaxRolloutsPerMinute)
	}
	for _, u := range []struct {
		flag  string
		value *string
	}{{"--webhook-url", &o.WebhookURL}, {"--notify-url", &o.NotifyURL}} {
		// A URL read from a file, as a Secret made with --from-file has it, ends with a newline.
		*u.value = strings.TrimSpace(*u.value)
		if *u.value == "" {
			continue
		}
		parsed, err := url.Parse(*u.value)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			// The path and the user info of a chat webhook are its token: never printed.
			return fmt.Errorf("%s must be an http or https URL, got %s", u.flag, redactedURL(*u.value))
		}
	}
	return o.reloader.validate()
}

// listNamespaces reads the namespaces the configmapwatcher is limited to, as Reloader does:
// --namespaces, else KUBERNETES_NAMESPACE (lookupEnv reads it). Reloader then ignores
// --namespace-selector and --namespaces-to-ignore; here they are refused.
func (o *Options) listNamespaces(lookupEnv func(string) (string, bool)) error {
	o.listedNamespaces, o.namespacesFrom = nil, ""
	switch env, _ := lookupEnv(kubernetesNamespaceVariable); {
	case len(o.Namespaces) > 0:
		o.listedNamespaces, o.namespacesFrom = slices.Clone(o.Namespaces), "--namespaces"
	case strings.TrimSpace(env) != "":
		o.listedNamespaces, o.namespacesFrom = []string{strings.TrimSpace(env)}, kubernetesNamespaceVariable
	default:
		return nil
	}
	for _, ns := range o.listedNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("%s: %q is not a namespace name: %s", o.namespacesFrom, ns, strings.Join(errs, "; "))
		}
	}
	slices.Sort(o.listedNamespaces)
	o.listedNamespaces = slices.Compact(o.listedNamespaces)
	switch {
	case o.NamespaceSelector != "":
		return fmt.Errorf("--namespace-selector does not go with %s, which lists the namespaces (Reloader ignores the selector then): give one", o.namespacesFrom)
	case len(o.NamespacesToIgnore) > 0:
		return fmt.Errorf("--namespaces-to-ignore does not go with %s, which lists the namespaces (Reloader ignores it then): give one", o.namespacesFrom)
	}
	return nil
}

// kubernetesNamespaceVariable is Reloader's environment variable of the one namespace to watch.
const kubernetesNamespaceVariable = "KUBERNETES_NAMESPACE"

// ignoredSources reads --resources-to-ignore as Reloader does: "configmaps" or "secrets" in any
// case, not both (that would leave nothing to watch).
func (o *Options) ignoredSources() (map[podrefs.SourceKind]bool, error) {
	out := map[podrefs.SourceKind]bool{}
	for _, v := range o.ResourcesToIgnore {
		switch strings.ToLower(v) {
		case "configmaps":
			out[podrefs.ConfigMap] = true
		case "secrets":
			out[podrefs.Secret] = true
		default:
			return nil, fmt.Errorf("--resources-to-ignore takes 'configmaps' or 'secrets', not %q", v)
		}
	}
	if len(out) > 1 {
		return nil, errors.New("--resources-to-ignore takes 'configmaps' or 'secrets', not both: that would leave nothing to watch")
	}
	return out, nil
}

// metaDefaultNamespace stands in for the manager's namespace where only the form of
// --config-digest-key-secret is checked.
const metaDefaultNamespace = "default"

// Settings resolves the options for a manager running in managerNamespace. Call Validate
// first: it reports what this assumes valid.
func (o *Options) Settings(managerNamespace string) Settings {
	secret, _ := o.digestKeySecret(managerNamespace)
	return Settings{
		Reading:              o.Reading(),
		Pause:                pauseAnnotations{period: o.PausePeriodAnnotation, at: o.PausedAtAnnotation},
		Debounce:             o.ReloadDebounce,
		DigestKeySecret:      secret,
		Scope:                o.Scope(),
		ReloadOnDelete:       o.ReloadOnDelete,
		ReloadOnCreate:       o.ReloadOnCreate,
		MaxRolloutsPerMinute: o.MaxRolloutsPerMinute,
		Webhook:              o.webhookSettings(),
		Alerts:               o.alerts,
		Strategy:             o.ReloadStrategy,
		LastReloadedFrom:     o.LastReloadedFrom,
	}
}

// webhookSettings is where rolls are posted: --webhook-url instead of rolling, or --notify-url
// besides.
func (o *Options) webhookSettings() WebhookSettings {
	if o.WebhookURL != "" {
		return WebhookSettings{URL: o.WebhookURL, Format: o.WebhookFormat, Only: true}
	}
	return WebhookSettings{URL: o.NotifyURL, Format: o.WebhookFormat}
}

// enumFlag is a flag that takes one of a few values, refusing others by name.
type enumFlag[T ~string] struct {
	value   *T
	allowed []T
}

func (f enumFlag[T]) String() string {
	if f.value == nil {
		return ""
	}
	return string(*f.value)
}

func (f enumFlag[T]) Set(s string) error {
	if !slices.Contains(f.allowed, T(s)) {
		names := make([]string, len(f.allowed))
		for i, a := range f.allowed {
			names[i] = string(a)
		}
		return fmt.Errorf("%q is not one of %s", s, strings.Join(names, ", "))
	}
	*f.value = T(s)
	return nil
}

// removedFlag is a flag that is no longer: giving it stops the manager at start, saying what
// to use instead, rather than being refused as unknown.
type removedFlag struct{ name, instead string }

func (f removedFlag) String() string { return "" }

func (f removedFlag) Set(string) error {
	return fmt.Errorf("--%s was removed: %s", f.name, f.instead)
}

// IsBoolFlag lets the removed flag be given without a value, as it was.
func (f removedFlag) IsBoolFlag() bool { return true }

// Scope is what the flags scope the configmapwatcher to. Call Validate first, and Prepare for
// --namespace-selector.
func (o *Options) Scope() Scope {
	if o.listedNamespaces != nil {
		return Scope{namespaces: o.listedNamespaces, listed: true, resourceSelector: o.resourceSelector, ignoredSources: o.ignoredKinds}
	}
	return Scope{namespaces: o.selectedNamespaces, unselected: o.unselectedNamespaces, selectsByLabels: o.namespaceSelector != nil,
		ignored: o.ignoredNamespaces, resourceSelector: o.resourceSelector, ignoredSources: o.ignoredKinds}
}

// Ignores says why Reloader's flags (--ignored-workload-types, --is-Argo-Rollouts) leave a
// workload kind ("Job", "CronJob", "Rollout") alone; "" when they do not.
func (o *Options) Ignores(kind string) string { return o.reloader.ignores(kind) }

// Reading is how workloads' annotations are read: Reloader's too (unless
// --reloader-annotations=false), under which names, and --auto-reload-all. The shared index of
// sources reads it once the flags are parsed.
func (o *Options) Reading() podrefs.Reading {
	return podrefs.Reading{Reloader: o.ReloaderAnnotations, AutoReloadAll: o.AutoReloadAll, Names: o.ReloaderNames, CSI: o.EnableCSIIntegration}
}

// annotationName is one of Reloader's annotation names a flag renames.
type annotationName struct {
	flag  string
	value *string
}

// annotationNames are Reloader's flags that rename its annotations, with where each goes.
func (o *Options) annotationNames() []annotationName {
	n := &o.ReloaderNames
	return []annotationName{
		{"configmap-annotation", &n.ConfigMapReload}, {"secret-annotation", &n.SecretReload}, {"auto-annotation", &n.Auto},
		{"ignore-annotation", &n.Ignore}, {"configmap-auto-annotation", &n.ConfigMapAuto}, {"secret-auto-annotation", &n.SecretAuto},
		{"auto-search-annotation", &n.Search}, {"search-match-annotation", &n.Match},
		{"pause-deployment-annotation", &o.PausePeriodAnnotation}, {"pause-deployment-time-annotation", &o.PausedAtAnnotation},
	}
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

// reloaderSelector parses a label selector written as Reloader's --namespace-selector and
// --resource-label-selector take it: comma-separated terms, each a label selector term or
// Reloader's "key:value", with "key:*" or "key=*" for any value; the whole may be quoted, as
// Reloader's Helm chart writes it. Nil for an empty value.
func reloaderSelector(flagName, value string) (labels.Selector, error) {
	value = strings.TrimSpace(value)
	if unquoted, ok := strings.CutPrefix(value, `"`); ok {
		value = strings.TrimSuffix(unquoted, `"`)
	}
	if value == "" {
		return nil, nil
	}
	terms := strings.Split(value, ",")
	for i, term := range terms {
		term = strings.TrimSpace(term)
		if key, v, ok := strings.Cut(term, ":"); ok {
			term = key + "=" + v
		}
		if key, v, ok := strings.Cut(term, "="); ok && !strings.HasPrefix(v, "=") && strings.TrimSpace(v) == "*" {
			term = strings.TrimSuffix(strings.TrimSpace(key), "!")
		}
		terms[i] = term
	}
	selector, err := labels.Parse(strings.Join(terms, ","))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	return selector, nil
}

// listFlag is a comma-separated list flag that, like Reloader's (pflag's string slices), may
// be given several times, each adding to the list, and whose items may be quoted.
type listFlag struct{ items *[]string }

func (l listFlag) String() string {
	if l.items == nil {
		return ""
	}
	return strings.Join(*l.items, ",")
}

func (l listFlag) Set(value string) error {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	r := csv.NewReader(strings.NewReader(value))
	r.TrimLeadingSpace = true
	record, err := r.Read()
	if err != nil {
		return fmt.Errorf("reading %q as a comma-separated list: %w", value, err)
	}
	for _, item := range record {
		if item = strings.TrimSpace(item); item != "" {
			*l.items = append(*l.items, item)
		}
	}
	return nil
}

func setOf(items []string) map[string]bool {
	out := map[string]bool{}
	for _, item := range items {
		out[item] = true
	}
	return out
}
