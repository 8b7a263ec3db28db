package configmapwatcher

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// This file is what a cluster moving from Stakater Reloader (v1.4.21) needs to see at once:
// every flag, environment variable and annotation of Reloader's, and what the configmapwatcher
// does with it. Reloader's flags are all accepted, so that its arguments do not stop the
// manager; at start the manager logs each one it was given but does not support, each of
// Reloader's variables set in its environment, and each of Reloader's annotation forms its
// workloads carry but it does not read, and exposes them in
// switchboard_configmapwatcher_reloader_unsupported. docs/migrating/from-reloader.md lists the
// same, and a test keeps the two in step.

// Support says what the configmapwatcher does with one of Reloader's flags, variables or
// annotations.
type Support string

// The kinds of support.
const (
	// Supported: ours has the same name and meaning (Note says where it differs).
	Supported Support = "supported"
	// Equivalent: accepted; what it asks for is done anyway, or needs nothing here.
	Equivalent Support = "equivalent"
	// Unsupported: accepted and reported at start; Note says what to use instead, or why not.
	Unsupported Support = "not supported"
)

// ReloaderForm is one of Reloader's flags, environment variables or annotations.
type ReloaderForm struct {
	// Name is the flag (without dashes), the variable or the annotation.
	Name string
	// Support says what the configmapwatcher does with it.
	Support Support
	// NoGap is the value of a flag that asks for nothing the configmapwatcher does not do, so
	// that the flag is not reported given it: Reloader's default for most flags, "annotations"
	// for reload-strategy.
	NoGap string
	// Bool says a flag takes no value, as Reloader's boolean flags.
	Bool bool
	// Manager says a supported flag sets one of the manager's own settings, and is bound by
	// the manager's options rather than the configmapwatcher's.
	Manager bool
	// Note says where ours differs, or what to use instead and why.
	Note string
}

// renamed is what the flags that rename Reloader's annotations do here: as in Reloader, the
// default name is then not read.
const renamed = "the annotation is read under the name given, and no longer under Reloader's default"

// ReloaderFlags are Reloader v1.4.21's flags (internal/pkg/util/util.go,
// ConfigureReloaderFlags), in its order.
var ReloaderFlags = []ReloaderForm{
	{Name: "auto-reload-all", Support: Supported, Bool: true, NoGap: "false", Note: "a workload opts out with reloader.stakater.com/auto: \"false\" (or the typed one, for one kind), or app.example.com/reload: \"false\""},
	{Name: "configmap-annotation", Support: Supported, Note: renamed},
	{Name: "secret-annotation", Support: Supported, Note: renamed},
	{Name: "auto-annotation", Support: Supported, Note: renamed},
	{Name: "ignore-annotation", Support: Supported, Note: renamed},
	{Name: "configmap-auto-annotation", Support: Supported, Note: renamed},
	{Name: "secret-auto-annotation", Support: Supported, Note: renamed},
	{Name: "auto-search-annotation", Support: Supported, Note: renamed},
	{Name: "search-match-annotation", Support: Supported, Note: renamed},
	{Name: "pause-deployment-annotation", Support: Supported, Note: renamed},
	{Name: "pause-deployment-time-annotation", Support: Supported, Note: renamed},
	{Name: "log-format", Support: Supported, Manager: true, Note: "'json' (our default) or '' (text), as --zap-encoder; another value stops the manager (Reloader logs text)"},
	{Name: "log-level", Support: Supported, Manager: true, Note: "Reloader's levels, as --zap-log-level (trace is verbosity 2)"},
	{Name: "webhook-url", Support: Supported, NoGap: "", Note: "posts instead of rolling, as Reloader's; our body names the workload, its sources and keys; --notify-url posts and rolls"},
	{Name: "resources-to-ignore", Support: Supported, NoGap: "", Note: "'configmaps' or 'secrets', not both: that kind is neither watched nor read"},
	{Name: "ignored-workload-types", Support: Supported, NoGap: "", Note: "'jobs', 'cronjobs' or both, as --controllers=*,-configmapwatcher-jobs,-configmapwatcher-cronjobs"},
	{Name: "namespaces", Support: Supported, NoGap: "", Note: "the configmapwatcher's namespaces (--watch-namespaces scopes the whole manager); refused with --namespace-selector or --namespaces-to-ignore, which Reloader ignores then"},
	{Name: "namespaces-to-ignore", Support: Supported, NoGap: "", Note: "left out of the cache and the watches by a field selector"},
	{Name: "namespace-selector", Support: Supported, NoGap: "", Note: "the manager restarts when the set of matching namespaces changes"},
	{Name: "resource-label-selector", Support: Supported, NoGap: "", Note: "key=value or key:value; a source outside it neither rolls nor is recorded"},
	{Name: "is-Argo-Rollouts", Support: Supported, Note: "'false' leaves Rollouts alone, as --controllers=*,-configmapwatcher-rollouts; without the flag, Rollouts are rolled whenever their CRD is installed (Reloader's default leaves them alone)"},
	{Name: "reload-strategy", Support: Supported, NoGap: "", Note: "env-vars and annotations as Reloader's, with a keyed digest where Reloader writes a plain SHA-1 of the data; without the flag, ours: config-hash (Reloader's default is env-vars)"},
	{Name: "reload-on-create", Support: Supported, Bool: true, NoGap: "false", Note: "a creation rolls the workloads that roll on the source: one they use that was missing, or one new to them created while the manager runs; without it a creation is recorded without a roll"},
	{Name: "reload-on-delete", Support: Supported, Bool: true, NoGap: "false", Note: "a deletion rolls the workloads that use the source; its return rolls them with --reload-on-create"},
	{Name: "enable-ha", Support: Supported, Manager: true, Bool: true, Note: "as --leader-elect; the Lease is ours, not Reloader's stakater-reloader-lock"},
	{Name: "sync-after-restart", Support: Equivalent, Bool: true, NoGap: "false", Note: "a restart rolls exactly the workloads whose data changed while the manager was down, from the record on each workload"},
	{Name: "enable-pprof", Support: Unsupported, Bool: true, NoGap: "false", Note: "the manager serves no pprof: its heap profiling is off, since it costs resident memory"},
	{Name: "pprof-addr", Support: Unsupported, NoGap: ":6060", Note: "the manager serves no pprof (see --enable-pprof)"},
	{Name: "enable-csi-integration", Support: Supported, Bool: true, NoGap: "false", Note: "SecretProviderClassPodStatus objects (Secrets Store CSI driver) are watched; a workload rolls once no Pod of the namespace still reports the versions it last rolled on, and not when a Pod first mounts; without the driver's CRDs the manager says so at start"},
}

// ReloaderEnvironment are the environment variables Reloader v1.4.21 reads.
var ReloaderEnvironment = []ReloaderForm{
	{Name: "KUBERNETES_NAMESPACE", Support: Supported, Note: "the one namespace the configmapwatcher looks at, unless --namespaces is given"},
	{Name: "ALERT_ON_RELOAD", Support: Supported, Note: "true posts Reloader's message for each source a roll was made for; a value other than true or false stops the manager at start"},
	{Name: "ALERT_WEBHOOK_URL", Support: Supported, Note: "where the alerts go; required with ALERT_ON_RELOAD=true (the manager stops at start without it)"},
	{Name: "ALERT_SINK", Support: Supported, Note: "slack, teams, gchat or raw (the default), each body as Reloader posts it; another value stops the manager at start"},
	{Name: "ALERT_WEBHOOK_PROXY", Support: Supported, Note: "the proxy the alerts go through"},
	{Name: "ALERT_ADDITIONAL_INFO", Support: Supported, Note: "put before each alert, as Reloader does"},
	{Name: "METRICS_COUNT_BY_NAMESPACE", Support: Equivalent, Note: "reloader_reload_executed_total_by_namespace is always exposed"},
	{Name: "RELOADER_NAMESPACE", Support: Unsupported, Note: "no meta-info ConfigMap is published; --list-controllers and the start-up log say how the manager runs"},
	{Name: "RELOADER_DEPLOYMENT_NAME", Support: Unsupported, Note: "see RELOADER_NAMESPACE"},
}

// ReloaderAnnotationForms are the annotations Reloader v1.4.21 reads or writes.
var ReloaderAnnotationForms = []ReloaderForm{
	{Name: v1alpha1.ReloaderAutoAnnotation, Support: Supported, Note: "any value Go's strconv.ParseBool reads as true: every referenced ConfigMap and Secret; \"false\" opts out of --auto-reload-all"},
	{Name: v1alpha1.ReloaderConfigMapAutoAnnotation, Support: Supported, Note: "the same, for ConfigMaps only"},
	{Name: v1alpha1.ReloaderSecretAutoAnnotation, Support: Supported, Note: "the same, for Secrets only"},
	{Name: v1alpha1.ReloaderConfigMapReloadAnnotation, Support: Supported, Note: "comma-separated names, referenced or not; an entry that is not a valid object name is an anchored regular expression; an entry that cannot be read is a Warning Event naming it, and the others still count"},
	{Name: v1alpha1.ReloaderSecretReloadAnnotation, Support: Supported, Note: "as configmap.reloader.stakater.com/reload"},
	{Name: v1alpha1.ReloaderSearchAnnotation, Support: Supported, Note: "\"true\": the referenced sources that carry reloader.stakater.com/match: \"true\""},
	{Name: v1alpha1.ReloaderMatchAnnotation, Support: Supported, Note: "on a ConfigMap or Secret"},
	{Name: v1alpha1.ReloaderIgnoreAnnotation, Support: Supported, Note: "on a ConfigMap or Secret"},
	{Name: v1alpha1.ReloaderConfigMapExcludeAnnotation, Support: Supported, Note: "names that never count, on the workload"},
	{Name: v1alpha1.ReloaderSecretExcludeAnnotation, Support: Supported, Note: "the same, for Secrets"},
	{Name: v1alpha1.ReloaderRolloutStrategyAnnotation, Support: Supported, Note: "on an Argo Rollout"},
	{Name: v1alpha1.ReloaderPausePeriodAnnotation, Support: Supported, Note: "on a Deployment"},
	{Name: v1alpha1.ReloaderPausedAtAnnotation, Support: Supported, Note: "written and read: a Deployment Reloader paused is resumed on time"},
	{Name: v1alpha1.ReloaderSecretProviderClassAutoAnnotation, Support: Supported, Note: "with --enable-csi-integration: every SecretProviderClass a CSI volume of the Pod template mounts (reloader.stakater.com/auto covers them too)"},
	{Name: v1alpha1.ReloaderSecretProviderClassReloadAnnotation, Support: Supported, Note: "with --enable-csi-integration: as configmap.reloader.stakater.com/reload, for SecretProviderClasses"},
	{Name: v1alpha1.ReloaderSecretProviderClassExcludeAnnotation, Support: Supported, Note: "with --enable-csi-integration: the same, for SecretProviderClasses"},
	{Name: v1alpha1.ReloaderLastReloadedFromAnnotation, Support: Supported, Note: "written on a rolled Pod template in Reloader's shape, with a keyed digest for hash: by --reload-strategy=annotations, and by the default strategy for a workload opted in through Reloader's annotations (--last-reloaded-from)"},
}

// providerClassAnnotations are Reloader's annotations of SecretProviderClasses, read only with
// --enable-csi-integration, as Reloader reads them.
var providerClassAnnotations = []string{v1alpha1.ReloaderSecretProviderClassAutoAnnotation,
	v1alpha1.ReloaderSecretProviderClassReloadAnnotation, v1alpha1.ReloaderSecretProviderClassExcludeAnnotation}

// isReloaderAnnotation says whether key is in one of Reloader's annotation domains.
func isReloaderAnnotation(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	return ok && (domain == "reloader.stakater.com" || strings.HasSuffix(domain, ".reloader.stakater.com"))
}

// reloaderFlags holds the values of Reloader's flags that have no flag of the same name in
// Options: they are accepted, and reported when given a value other than their NoGap.
type reloaderFlags struct {
	values map[string]*reloaderValue
	// ignoredWorkloadTypes is --ignored-workload-types, which is supported.
	ignoredWorkloadTypes []string
	// argoRollouts is --is-Argo-Rollouts; nil when not given.
	argoRollouts *bool
}

// reloaderValue is the value of one accepted flag.
type reloaderValue struct {
	form  ReloaderForm
	value string
	set   bool
}

// String is the value given, "" when none: --help shows no default for what is not applied.
func (v *reloaderValue) String() string {
	if v == nil {
		return ""
	}
	return v.value
}

func (v *reloaderValue) Set(s string) error {
	v.value, v.set = s, true
	return nil
}

// IsBoolFlag lets Reloader's boolean flags be given without a value.
func (v *reloaderValue) IsBoolFlag() bool { return v.form.Bool }

func newReloaderFlags() *reloaderFlags {
	return &reloaderFlags{values: map[string]*reloaderValue{}}
}

// addFlags registers Reloader's flags that Options does not bind under the same name.
func (f *reloaderFlags) addFlags(fs *flag.FlagSet) {
	fs.Func("is-Argo-Rollouts", "'true' or 'false': whether the configmapwatcher rolls Argo Rollouts, as Reloader's flag; without it, Rollouts are rolled whenever their CRD is installed (Reloader's default is false).", func(s string) error {
		on, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		f.argoRollouts = &on
		return nil
	})
	fs.Var(listFlag{&f.ignoredWorkloadTypes}, "ignored-workload-types", "'jobs', 'cronjobs' or both: the configmapwatcher leaves that kind alone, as Reloader's flag (and as --controllers=*,-configmapwatcher-jobs).")
	for _, form := range ReloaderFlags {
		if form.Support == Supported {
			continue
		}
		v := &reloaderValue{form: form}
		f.values[form.Name] = v
		usage := fmt.Sprintf("Stakater Reloader's flag, accepted and equivalent here: %s.", form.Note)
		if form.Support == Unsupported {
			usage = fmt.Sprintf("Stakater Reloader's flag, refused at start unless given Reloader's default (%q): %s.", form.NoGap, form.Note)
		}
		fs.Var(v, form.Name, usage)
	}
}

// validate refuses each of Reloader's flags that is not supported, given a value that asks for
// something (Reloader's default asks for nothing), and checks --ignored-workload-types as
// Reloader does.
func (f *reloaderFlags) validate() error {
	for _, name := range slices.Sorted(maps.Keys(f.values)) {
		if v := f.values[name]; v.set && v.form.Support == Unsupported && v.value != v.form.NoGap {
			return fmt.Errorf("--%s=%s: Stakater Reloader's flag, not supported here: %s", name, v.value, v.form.Note)
		}
	}
	for _, v := range f.ignoredWorkloadTypes {
		if v != "jobs" && v != "cronjobs" {
			return fmt.Errorf("--ignored-workload-types takes 'jobs', 'cronjobs' or both, not %q", v)
		}
	}
	return nil
}

// ignores says why Reloader's flags leave the workload kind alone; "" when they do not.
func (f *reloaderFlags) ignores(kind string) string {
	switch {
	case slices.Contains(f.ignoredWorkloadTypes, strings.ToLower(kind)+"s"):
		return "--ignored-workload-types leaves " + kind + "s alone"
	case kind == Rollouts.Name && f.argoRollouts != nil && !*f.argoRollouts:
		return "--is-Argo-Rollouts=false leaves Rollouts alone"
	}
	return ""
}

// reportReloaderFlags logs each of Reloader's unsupported environment variables set in the
// environment, and sets the metric of each; it returns their names. (Reloader's unsupported
// flags stop the manager at start: Validate.)
func (o *Options) reportReloaderFlags(log logr.Logger, lookupEnv func(string) (string, bool)) []string {
	var seen []string
	for _, form := range ReloaderEnvironment {
		value, set := lookupEnv(form.Name)
		if !set || form.Support != Unsupported {
			continue
		}
		reloaderUnsupported.WithLabelValues("env", form.Name, "").Set(1)
		// The value may be a webhook URL, whose path is a secret: never logged.
		log.Info("Reloader environment variable not supported", "variable", form.Name, "empty", value == "", "instead", form.Note)
		seen = append(seen, form.Name)
	}
	return seen
}

// unsupportedAnnotations returns, of the annotations of a workload and of its Pod template,
// those of Reloader's that the configmapwatcher does not read: the unsupported forms (and any
// unknown one in Reloader's domains), with --reloader-annotations=false every input form, and
// without --enable-csi-integration the SecretProviderClass forms.
func unsupportedAnnotations(annotations map[string]string, reading podrefs.Reading) []string {
	var out []string
	for key := range annotations {
		// last-reloaded-from is a mark a roll writes, never read.
		if !isReloaderAnnotation(key) || key == v1alpha1.ReloaderLastReloadedFromAnnotation {
			continue
		}
		i := slices.IndexFunc(ReloaderAnnotationForms, func(f ReloaderForm) bool { return f.Name == key })
		switch {
		case i < 0, ReloaderAnnotationForms[i].Support == Unsupported:
			out = append(out, key)
		case !reading.Reloader && ReloaderAnnotationForms[i].Support == Supported:
			out = append(out, key)
		case !reading.CSI && slices.Contains(providerClassAnnotations, key):
			out = append(out, key)
		}
	}
	return out
}

// reportReloaderAnnotations counts, over the workloads of kind k in reader (the cache), those
// that carry each of Reloader's annotations the configmapwatcher does not read, logs one line
// per annotation with the count and up to five workloads, and sets the metric.
func reportReloaderAnnotations[T client.Object](ctx context.Context, reader client.Reader, k Kind[T], reading podrefs.Reading, log logr.Logger) error {
	list := k.NewList()
	// The cache's own objects, read and not kept: a copy of every workload would be garbage
	// that the resident memory holds for a while.
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing %ss: %w", k.Name, err)
	}
	carriers := map[string][]string{}
	err := apimeta.EachListItem(list, func(item runtime.Object) error {
		obj := item.(client.Object)
		found := map[string]bool{}
		for _, annotations := range []map[string]string{obj.GetAnnotations(), templateAnnotations(podrefs.PodTemplate(obj))} {
			for _, key := range unsupportedAnnotations(annotations, reading) {
				found[key] = true
			}
		}
		for key := range found {
			carriers[key] = append(carriers[key], obj.GetNamespace()+"/"+obj.GetName())
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(carriers)) {
		names := carriers[key]
		slices.Sort(names)
		reloaderUnsupported.WithLabelValues("annotation", key, k.Name).Set(float64(len(names)))
		note := "not read: --reloader-annotations=false"
		if i := slices.IndexFunc(ReloaderAnnotationForms, func(f ReloaderForm) bool { return f.Name == key }); i < 0 {
			note = "not one of Reloader's annotations"
		} else if ReloaderAnnotationForms[i].Support == Unsupported {
			note = ReloaderAnnotationForms[i].Note
		} else if reading.Reloader && slices.Contains(providerClassAnnotations, key) {
			note = "not read: --enable-csi-integration is off, as in Reloader"
		}
		log.Info("Reloader annotation not supported", "annotation", key, "kind", k.Name, "workloads", len(names),
			"examples", names[:min(5, len(names))], "why", note)
	}
	return nil
}
