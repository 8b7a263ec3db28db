package configmapwatcher

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
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
	// Note says where ours differs, or what to use instead and why.
	Note string
}

// fixedNames is why the flags that rename Reloader's annotations are not supported.
const fixedNames = "annotation names are fixed: Reloader's default names and app.example.com/reload; a workload annotated under another name is not rolled"

// ReloaderFlags are Reloader v1.4.21's flags (internal/pkg/util/util.go,
// ConfigureReloaderFlags), in its order.
var ReloaderFlags = []ReloaderForm{
	{Name: "auto-reload-all", Support: Supported, Bool: true, NoGap: "false"},
	{Name: "configmap-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderConfigMapReloadAnnotation, Note: fixedNames},
	{Name: "secret-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderSecretReloadAnnotation, Note: fixedNames},
	{Name: "auto-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderAutoAnnotation, Note: fixedNames},
	{Name: "ignore-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderIgnoreAnnotation, Note: fixedNames},
	{Name: "configmap-auto-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderConfigMapAutoAnnotation, Note: fixedNames},
	{Name: "secret-auto-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderSecretAutoAnnotation, Note: fixedNames},
	{Name: "auto-search-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderSearchAnnotation, Note: fixedNames},
	{Name: "search-match-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderMatchAnnotation, Note: fixedNames},
	{Name: "pause-deployment-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderPausePeriodAnnotation, Note: fixedNames},
	{Name: "pause-deployment-time-annotation", Support: Unsupported, NoGap: v1alpha1.ReloaderPausedAtAnnotation, Note: fixedNames},
	{Name: "log-format", Support: Equivalent, NoGap: "", Note: "logs are JSON lines (zap); --zap-encoder=console for text"},
	{Name: "log-level", Support: Unsupported, NoGap: "info", Note: "use --zap-log-level"},
	{Name: "webhook-url", Support: Supported, NoGap: "", Note: "posts instead of rolling, as Reloader's; our body names the workload, its sources and keys; --notify-url posts and rolls"},
	{Name: "resources-to-ignore", Support: Supported, NoGap: ""},
	{Name: "ignored-workload-types", Support: Supported, NoGap: "", Note: "'jobs', 'cronjobs' or both, as --controllers=*,-configmapwatcher-jobs,-configmapwatcher-cronjobs"},
	{Name: "namespaces", Support: Unsupported, NoGap: "", Note: "use --watch-namespaces, which scopes the whole manager"},
	{Name: "namespaces-to-ignore", Support: Supported, NoGap: ""},
	{Name: "namespace-selector", Support: Supported, NoGap: "", Note: "the manager restarts when the set of matching namespaces changes"},
	{Name: "resource-label-selector", Support: Supported, NoGap: ""},
	{Name: "is-Argo-Rollouts", Support: Equivalent, NoGap: "false", Note: "Rollouts are rolled whenever the argoproj.io Rollout CRD is installed; --controllers=*,-configmapwatcher-rollouts leaves them alone"},
	{Name: "reload-strategy", Support: Unsupported, NoGap: "annotations", Note: "a roll always changes the Pod template's app.example.com/config-hash (a keyed digest), never a container's environment: Reloader's env-vars strategy puts an unkeyed hash of Secret data in every container"},
	{Name: "reload-on-create", Support: Unsupported, NoGap: "false", Note: "the creation of a source a workload uses and that was missing always rolls it; a source new to a workload is recorded without a roll"},
	{Name: "reload-on-delete", Support: Supported, Bool: true, NoGap: "false"},
	{Name: "enable-ha", Support: Unsupported, Bool: true, NoGap: "false", Note: "use --leader-elect: several replicas without it roll each change several times"},
	{Name: "sync-after-restart", Support: Equivalent, Bool: true, NoGap: "false", Note: "a restart rolls exactly the workloads whose data changed while the manager was down, from the record on each workload"},
	{Name: "enable-pprof", Support: Unsupported, Bool: true, NoGap: "false", Note: "the manager serves no pprof: profiling costs resident memory"},
	{Name: "pprof-addr", Support: Unsupported, NoGap: ":6060", Note: "see enable-pprof"},
	{Name: "enable-csi-integration", Support: Unsupported, Bool: true, NoGap: "false", Note: "SecretProviderClassPodStatus objects (Secrets Store CSI driver) are not watched"},
}

// ReloaderEnvironment are the environment variables Reloader v1.4.21 reads.
var ReloaderEnvironment = []ReloaderForm{
	{Name: "KUBERNETES_NAMESPACE", Support: Unsupported, Note: "use --watch-namespaces"},
	{Name: "ALERT_ON_RELOAD", Support: Unsupported, Note: "use --webhook-url"},
	{Name: "ALERT_WEBHOOK_URL", Support: Unsupported, Note: "use --webhook-url"},
	{Name: "ALERT_SINK", Support: Unsupported, Note: "use --webhook-format=slack for slack, gchat and teams, json otherwise"},
	{Name: "ALERT_WEBHOOK_PROXY", Support: Unsupported, Note: "set HTTPS_PROXY, which the webhook's client honours"},
	{Name: "ALERT_ADDITIONAL_INFO", Support: Unsupported, Note: "the notification names the workload's namespace; add the cluster on the receiving side"},
	{Name: "METRICS_COUNT_BY_NAMESPACE", Support: Equivalent, Note: "reloader_reload_executed_total_by_namespace is always exposed"},
	{Name: "RELOADER_NAMESPACE", Support: Unsupported, Note: "no meta-info ConfigMap is published; --list-controllers and the start-up log say how the manager runs"},
	{Name: "RELOADER_DEPLOYMENT_NAME", Support: Unsupported, Note: "see RELOADER_NAMESPACE"},
}

// ReloaderAnnotationForms are the annotations Reloader v1.4.21 reads or writes.
var ReloaderAnnotationForms = []ReloaderForm{
	{Name: v1alpha1.ReloaderAutoAnnotation, Support: Supported},
	{Name: v1alpha1.ReloaderConfigMapAutoAnnotation, Support: Supported},
	{Name: v1alpha1.ReloaderSecretAutoAnnotation, Support: Supported},
	{Name: v1alpha1.ReloaderConfigMapReloadAnnotation, Support: Supported, Note: "an entry that cannot be read is a Warning Event naming it; the others still count"},
	{Name: v1alpha1.ReloaderSecretReloadAnnotation, Support: Supported, Note: "as configmap.reloader.stakater.com/reload"},
	{Name: v1alpha1.ReloaderSearchAnnotation, Support: Supported},
	{Name: v1alpha1.ReloaderMatchAnnotation, Support: Supported, Note: "on a ConfigMap or Secret"},
	{Name: v1alpha1.ReloaderIgnoreAnnotation, Support: Supported, Note: "on a ConfigMap or Secret"},
	{Name: v1alpha1.ReloaderConfigMapExcludeAnnotation, Support: Supported},
	{Name: v1alpha1.ReloaderSecretExcludeAnnotation, Support: Supported},
	{Name: v1alpha1.ReloaderRolloutStrategyAnnotation, Support: Supported, Note: "on an Argo Rollout"},
	{Name: v1alpha1.ReloaderPausePeriodAnnotation, Support: Supported, Note: "on a Deployment"},
	{Name: v1alpha1.ReloaderPausedAtAnnotation, Support: Supported, Note: "written and read: a Deployment Reloader paused is resumed on time"},
	{Name: "secretproviderclass.reloader.stakater.com/auto", Support: Unsupported, Note: "SecretProviderClasses are not watched"},
	{Name: "secretproviderclass.reloader.stakater.com/reload", Support: Unsupported, Note: "SecretProviderClasses are not watched"},
	{Name: "secretproviderclasses.exclude.reloader.stakater.com/reload", Support: Unsupported, Note: "SecretProviderClasses are not watched"},
	{Name: "reloader.stakater.com/last-reloaded-from", Support: Equivalent, Note: "written by Reloader on a rolled Pod template, read by nobody; a roll here writes app.example.com/config-hash"},
}

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
	fs.Var(listFlag{&f.ignoredWorkloadTypes}, "ignored-workload-types", "'jobs', 'cronjobs' or both: the configmapwatcher leaves that kind alone, as Reloader's flag (and as --controllers=*,-configmapwatcher-jobs).")
	for _, form := range ReloaderFlags {
		if form.Support == Supported {
			continue
		}
		v := &reloaderValue{form: form}
		f.values[form.Name] = v
		fs.Var(v, form.Name, fmt.Sprintf("Stakater Reloader's flag, accepted so that Reloader's arguments run here; %s: %s.", form.Support, form.Note))
	}
}

// validate checks --ignored-workload-types as Reloader does.
func (f *reloaderFlags) validate() error {
	for _, v := range f.ignoredWorkloadTypes {
		if v != "jobs" && v != "cronjobs" {
			return fmt.Errorf("--ignored-workload-types takes 'jobs', 'cronjobs' or both, not %q", v)
		}
	}
	return nil
}

// ignores says whether --ignored-workload-types leaves the workload kind alone.
func (f *reloaderFlags) ignores(kind string) bool {
	return slices.Contains(f.ignoredWorkloadTypes, strings.ToLower(kind)+"s")
}

// reportReloaderFlags logs each of Reloader's unsupported flags given a value other than its
// NoGap, and each of Reloader's unsupported variables set in the environment, and sets the
// metric of each. It returns their names, flags with their dashes.
func (o *Options) reportReloaderFlags(log logr.Logger, lookupEnv func(string) (string, bool)) []string {
	var seen []string
	for _, name := range slices.Sorted(maps.Keys(o.reloader.values)) {
		v := o.reloader.values[name]
		if !v.set || v.form.Support != Unsupported || v.value == v.form.NoGap {
			continue
		}
		reloaderUnsupported.WithLabelValues("flag", "--"+name, "").Set(1)
		log.Info("Reloader flag not supported", "flag", "--"+name, "value", v.value, "instead", v.form.Note)
		seen = append(seen, "--"+name)
	}
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
// unknown one in Reloader's domains), and with --reloader-annotations=false every input form.
func unsupportedAnnotations(annotations map[string]string, reading podrefs.Reading) []string {
	var out []string
	for key := range annotations {
		if !isReloaderAnnotation(key) {
			continue
		}
		i := slices.IndexFunc(ReloaderAnnotationForms, func(f ReloaderForm) bool { return f.Name == key })
		switch {
		case i < 0, ReloaderAnnotationForms[i].Support == Unsupported:
			out = append(out, key)
		case !reading.Reloader && ReloaderAnnotationForms[i].Support == Supported:
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
		}
		log.Info("Reloader annotation not supported", "annotation", key, "kind", k.Name, "workloads", len(names),
			"examples", names[:min(5, len(names))], "why", note)
	}
	return nil
}
