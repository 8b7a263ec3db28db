package podrefs

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/example/switchboard/apis/v1alpha1"
)

// Selection is what a workload asked to be rolled on: which ConfigMaps and Secrets count.
// Whether a given source counts can depend on that source's own annotations (Reloader's match
// and ignore), so the final word is Tracks, once the source has been read.
type Selection struct {
	// reloader: Reloader's annotations are honoured, on the workload and on the source, under
	// names.
	reloader bool
	names    ReloaderNames
	// viaReloader: something the workload rolls on comes from Reloader's annotations or from
	// --auto-reload-all, so Reloader's behaviour is what its owner expects (see ViaReloader).
	viaReloader bool
	// kinds are the kinds of sources read: SourceKinds, and SecretProviderClass with
	// Reading.CSI.
	kinds    []SourceKind
	policies map[SourceKind]*policy
}

// Reading says how Select reads a workload's annotations.
type Reading struct {
	// Reloader: honour Stakater Reloader's annotations as well as ours.
	Reloader bool
	// AutoReloadAll is Reloader's --auto-reload-all: a workload that says nothing rolls on every
	// ConfigMap and Secret its Pod template references. It opts out with our annotation
	// "false", or with Reloader's auto annotation (or that of one kind) set to anything but a
	// true value ("false"), read where Reloader reads it.
	AutoReloadAll bool
	// Names are the names Reloader's annotations are read under; the zero value is Reloader's
	// defaults.
	Names ReloaderNames
	// CSI is Reloader's --enable-csi-integration: SecretProviderClasses count too, through
	// Reloader's annotations of that kind and its auto, search and --auto-reload-all, as
	// Reloader reads them. Ours (v1alpha1.ReloadAnnotation) names ConfigMaps and Secrets only.
	CSI bool
}

// ReloaderNames are the names of Reloader's annotations that Reloader's flags can rename
// (--configmap-annotation, --secret-annotation, --auto-annotation, --configmap-auto-annotation,
// --secret-auto-annotation, --auto-search-annotation, --search-match-annotation,
// --ignore-annotation). The exclude annotations have no flag.
type ReloaderNames struct {
	ConfigMapReload, SecretReload, Auto, ConfigMapAuto, SecretAuto, Search, Match, Ignore string
}

// DefaultReloaderNames are Reloader's own names.
func DefaultReloaderNames() ReloaderNames {
	return ReloaderNames{
		ConfigMapReload: v1alpha1.ReloaderConfigMapReloadAnnotation, SecretReload: v1alpha1.ReloaderSecretReloadAnnotation,
		Auto: v1alpha1.ReloaderAutoAnnotation, ConfigMapAuto: v1alpha1.ReloaderConfigMapAutoAnnotation, SecretAuto: v1alpha1.ReloaderSecretAutoAnnotation,
		Search: v1alpha1.ReloaderSearchAnnotation, Match: v1alpha1.ReloaderMatchAnnotation, Ignore: v1alpha1.ReloaderIgnoreAnnotation,
	}
}

// OrDefaults returns n, Reloader's defaults for the zero value.
func (n ReloaderNames) OrDefaults() ReloaderNames {
	if n == (ReloaderNames{}) {
		return DefaultReloaderNames()
	}
	return n
}

// OptIn are the names of the annotations that can opt a workload in.
func (n ReloaderNames) OptIn() []string {
	n = n.OrDefaults()
	return []string{n.Auto, n.ConfigMapAuto, n.SecretAuto, n.ConfigMapReload, n.SecretReload, n.Search}
}

// keys are the per-kind annotations of Reloader's.
func (n ReloaderNames) keys(kind SourceKind) struct{ reload, auto, exclude string } {
	switch kind {
	case SecretProviderClass:
		// Reloader has no flags that rename these.
		return struct{ reload, auto, exclude string }{v1alpha1.ReloaderSecretProviderClassReloadAnnotation,
			v1alpha1.ReloaderSecretProviderClassAutoAnnotation, v1alpha1.ReloaderSecretProviderClassExcludeAnnotation}
	case Secret:
		return struct{ reload, auto, exclude string }{n.SecretReload, n.SecretAuto, v1alpha1.ReloaderSecretExcludeAnnotation}
	}
	return struct{ reload, auto, exclude string }{n.ConfigMapReload, n.ConfigMapAuto, v1alpha1.ReloaderConfigMapExcludeAnnotation}
}

// policy is what a workload asked for one kind of source.
type policy struct {
	// referenced: every source of the kind that the Pod template references.
	referenced bool
	// search: the referenced sources of the kind that carry Reloader's match annotation.
	search bool
	// names count whether or not the Pod template references them.
	names map[string]bool
	// patterns are anchored regular expressions of names; they count whether or not the Pod
	// template references them, so finding them takes a list of the namespace's sources.
	patterns []*regexp.Regexp
	// excluded never count.
	excluded map[string]bool
}

func (p *policy) matches(name string) bool {
	for _, re := range p.patterns {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// Select reads what a workload asked to be rolled on from its annotations and its Pod
// template's, as r says. It returns what it could read and, when an annotation or one of its
// entries cannot be read, an error that names each: the entries it could read count all the
// same.
//
// Our annotation (v1alpha1.ReloadAnnotation) is read on the workload: "true" for every
// referenced ConfigMap and Secret, else a list of names. Reloader's are read as Reloader reads
// them: for each kind, on the workload, or on the Pod template when the workload carries none of
// that kind's reload, auto, typed auto and search annotations; the exclude annotations only on
// the workload. Auto values are read with strconv.ParseBool (anything else is false), search
// must be "true". A reload entry that is a valid object name is that name, literally (a dot in
// it is not a wildcard); any other entry is an anchored regular expression.
func Select(annotations, templateAnnotations map[string]string, r Reading) (Selection, error) {
	s := Selection{reloader: r.Reloader, names: r.Names.OrDefaults(), kinds: SourceKinds, policies: map[SourceKind]*policy{}}
	if r.CSI {
		s.kinds = append(slices.Clone(SourceKinds), SecretProviderClass)
	}
	for _, kind := range s.kinds {
		s.policies[kind] = &policy{names: map[string]bool{}, excluded: map[string]bool{}}
	}
	var errs []error
	ours, hasOurs := annotations[v1alpha1.ReloadAnnotation]
	optedOut := hasOurs && strings.TrimSpace(ours) == "false"
	if hasOurs && !optedOut {
		errs = append(errs, s.readOurs(ours))
	}
	for _, kind := range s.kinds {
		if r.Reloader {
			errs = append(errs, s.readReloader(kind, annotations, templateAnnotations, r.AutoReloadAll && !optedOut))
		} else if r.AutoReloadAll && !optedOut {
			s.policies[kind].referenced = true
			s.viaReloader = true
		}
	}
	return s, errors.Join(errs...)
}

// readOurs reads v1alpha1.ReloadAnnotation.
func (s Selection) readOurs(value string) error {
	if strings.TrimSpace(value) == "true" {
		for _, kind := range SourceKinds {
			s.policies[kind].referenced = true
		}
		return nil
	}
	var errs []error
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		kind, name := ConfigMap, entry
		if prefix, rest, ok := strings.Cut(entry, "/"); ok {
			switch strings.ToLower(prefix) {
			case "configmap":
				kind, name = ConfigMap, rest
			case "secret":
				kind, name = Secret, rest
			default:
				errs = append(errs, fmt.Errorf("%q is not NAME, secret/NAME or configmap/NAME", entry))
				continue
			}
		}
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%q is not a %s name: %s", entry, kind, strings.Join(msgs, "; ")))
			continue
		}
		s.policies[kind].names[name] = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("annotation %s: %w", v1alpha1.ReloadAnnotation, errors.Join(errs...))
	}
	return nil
}

// readReloader reads Reloader's annotations for kind; autoReloadAll is Reloader's flag, for a
// workload that did not opt out with our annotation.
func (s *Selection) readReloader(kind SourceKind, annotations, templateAnnotations map[string]string, autoReloadAll bool) error {
	keys := s.names.keys(kind)
	p := s.policies[kind]
	for _, name := range splitList(annotations[keys.exclude]) {
		p.excluded[name] = true
	}
	from, where := annotations, "the workload"
	if !hasAny(annotations, keys.reload, s.names.Auto, keys.auto, s.names.Search) {
		from, where = templateAnnotations, "the Pod template"
	}
	// As Reloader: either auto annotation true, or --auto-reload-all when neither says anything
	// (so "false", or any value but a true one, opts out).
	auto, typedAuto := from[s.names.Auto], from[keys.auto]
	if isTrue(auto) || isTrue(typedAuto) || autoReloadAll && auto == "" && typedAuto == "" {
		p.referenced = true
		s.viaReloader = true
	}
	if from[s.names.Search] == "true" {
		p.search = true
		s.viaReloader = true
	}
	var errs []error
	for _, entry := range splitList(from[keys.reload]) {
		s.viaReloader = true
		if len(validation.IsDNS1123Subdomain(entry)) == 0 {
			p.names[entry] = true
			continue
		}
		re, err := regexp.Compile("^(?:" + entry + ")$")
		if err != nil {
			errs = append(errs, fmt.Errorf("%q is not a regular expression: %w", entry, err))
			continue
		}
		p.patterns = append(p.patterns, re)
	}
	if len(errs) > 0 {
		return fmt.Errorf("annotation %s on %s: %w", keys.reload, where, errors.Join(errs...))
	}
	return nil
}

func hasAny(annotations map[string]string, keys ...string) bool {
	for _, key := range keys {
		if _, ok := annotations[key]; ok {
			return true
		}
	}
	return false
}

func isTrue(value string) bool {
	b, err := strconv.ParseBool(value)
	return err == nil && b
}

// splitList splits a comma-separated list and drops empty entries.
func splitList(value string) []string {
	var out []string
	for _, entry := range strings.Split(value, ",") {
		if entry = strings.TrimSpace(entry); entry != "" {
			out = append(out, entry)
		}
	}
	return out
}

// ViaReloader says whether something the workload rolls on comes from Reloader's annotations
// or from --auto-reload-all: where Reloader behaves otherwise than we do by default (a CronJob
// runs a Job at once), its behaviour is what the workload's owner relies on.
func (s Selection) ViaReloader() bool { return s.viaReloader }

// OptedIn says whether the workload asked to be rolled on anything at all.
func (s Selection) OptedIn() bool {
	for _, p := range s.policies {
		if p.referenced || p.search || len(p.names) > 0 || len(p.patterns) > 0 {
			return true
		}
	}
	return false
}

// Candidates returns the sources to read to know what the workload rolls on, sorted: the
// named ones and, where the workload asked for them, the referenced ones; never the excluded
// ones. Sources matched by a pattern come on top (ListsKind says when): finding them takes a
// list of the namespace.
func (s Selection) Candidates(refs map[Source]Use) []Source {
	set := map[Source]bool{}
	for kind, p := range s.policies {
		for name := range p.names {
			set[Source{Kind: kind, Name: name}] = true
		}
		if p.referenced || p.search {
			for src := range refs {
				if src.Kind == kind {
					set[src] = true
				}
			}
		}
	}
	var out []Source
	for src := range set {
		if !s.policies[src.Kind].excluded[src.Name] {
			out = append(out, src)
		}
	}
	slices.SortFunc(out, compareSources)
	return out
}

// ListsKind says whether the workload rolls on names of kind that match a pattern: those are
// found by listing the namespace's sources of kind and asking Matches.
func (s Selection) ListsKind(kind SourceKind) bool {
	p := s.policies[kind]
	return p != nil && len(p.patterns) > 0
}

// Matches says whether a source of this name counts through a pattern (and is not excluded).
func (s Selection) Matches(src Source) bool {
	p := s.policies[src.Kind]
	return p != nil && !p.excluded[src.Name] && p.matches(src.Name)
}

// Tracks says whether the workload rolls on src: referenced says whether the Pod template
// references it; exists whether it exists, and then annotations are its own. A source that
// does not exist counts when it would if it carried Reloader's match annotation and not its
// ignore annotation: once created, it is read again.
func (s Selection) Tracks(src Source, referenced bool, annotations map[string]string, exists bool) bool {
	p := s.policies[src.Kind]
	switch {
	case p == nil, p.excluded[src.Name]:
		return false
	case exists && s.reloader && annotations[s.names.Ignore] == "true":
		return false
	case p.names[src.Name], p.matches(src.Name):
		return true
	case referenced && p.referenced:
		return true
	case referenced && p.search:
		return !exists || annotations[s.names.Match] == "true"
	}
	return false
}

// IndexValues returns the values the shared index files a workload under: each source it may
// roll on as Source.Key, and Wildcard(kind) when names of kind count through a pattern.
func (s Selection) IndexValues(refs map[Source]Use) []string {
	var out []string
	for _, src := range s.Candidates(refs) {
		out = append(out, src.Key())
	}
	for _, kind := range s.kinds {
		if s.ListsKind(kind) {
			out = append(out, Wildcard(kind))
		}
	}
	slices.Sort(out)
	return out
}

func compareSources(a, b Source) int {
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// LegacyReloadConfigMaps returns, sorted, the ConfigMaps that releases before Secrets were
// read hashed into v1alpha1.ConfigHashAnnotation: with our annotation "true", every referenced
// ConfigMap, else every listed name (all taken as ConfigMaps). The upgrade from those releases
// recomputes that hash to tell whether the data changed meanwhile.
func LegacyReloadConfigMaps(annotations map[string]string, spec *corev1.PodSpec) []string {
	value, ok := annotations[v1alpha1.ReloadAnnotation]
	if !ok {
		return nil
	}
	if strings.TrimSpace(value) == "true" {
		return ConfigMaps(spec)
	}
	names := splitList(value)
	slices.Sort(names)
	return slices.Compact(names)
}
