package controllers

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/apifeatures"
	"github.com/example/switchboard/controllers/internal/metricsauth"
	"github.com/example/switchboard/controllers/internal/transient"
	"github.com/example/switchboard/sources"
)

// LeaderElectionID is the name of the Lease the managers of one installation compete for with
// --leader-elect-scope=manager.
const LeaderElectionID = "switchboard.app.example.com"

// LeaseNamePrefix starts the name of each controller group's Lease with
// --leader-elect-scope=controller: the Lease of group g is LeaseNamePrefix + g.
const LeaseNamePrefix = "switchboard-"

// The values of --leader-elect-scope.
const (
	// ScopeManager elects one leader for the whole manager through the Lease LeaderElectionID:
	// the leader runs every selected controller, the other replicas none.
	ScopeManager = "manager"
	// ScopeController elects a leader per controller group, each through a Lease of its own,
	// so that the replicas share the controllers; every replica keeps the caches of every
	// selected controller synced, to take over without a relist.
	ScopeController = "controller"
)

// Leader election timing, client-go's and controller-runtime's defaults.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Options are the manager's command-line settings.
type Options struct {
	Controllers             string
	Concurrency             string
	ListControllers         bool
	Version                 bool
	MetricsBindAddress      string
	SecureMetrics           bool
	MetricsCertPath         string
	MetricsCertName         string
	MetricsCertKey          string
	EnableHTTP2             bool
	HealthProbeBindAddress  string
	LeaderElect             bool
	LeaderElectScope        string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	LeaderElectionNamespace string
	// LeaderElectResourceName names the Leases of this installation; empty, LeaderElectionID
	// and LeaseNamePrefix + group.
	LeaderElectResourceName string
	// LeaderElectFixedNamesHolderPrefix starts the identity of this installation's replicas
	// (their Pods' names) in the Leases of the fixed names, LeaderElectionID and
	// LeaseNamePrefix + group, which its replicas of an earlier version may still hold while a
	// rollout moves it to the Leases of LeaderElectResourceName; empty, none of them is
	// waited for (see fixedNamesDeferral).
	LeaderElectFixedNamesHolderPrefix string
	// LeaderElectionIdentity names this replica in the Leases of --leader-elect-scope=controller.
	// It has no flag: empty means the host name and a random suffix, unique per process; tests
	// that run several replicas in one process set it to tell them apart.
	LeaderElectionIdentity string
	WatchNamespaces        string
	WatchLabelSelector     string
	KubeAPIQPS             float64
	KubeAPIBurst           int
	SyncPeriod             time.Duration
	ResyncInterval         time.Duration
	SourceBufferSize       int
	TriggerBindAddress     string
	TriggerTokenFile       string
	TriggerSecure          bool
	TriggerCertDir         string
	Zap                    zap.Options
	IdleRecheckInterval    time.Duration
	ShardGroup             string
	ShardRebalanceInterval time.Duration

	// missingAPIs are the optional APIs the API server does not serve, as Prepare found them.
	missingAPIs apifeatures.Missing
	// dynamic is this replica's part in --shard-group, made by Prepare; nil without it.
	dynamic *dynamicShards
	// metadata is the client of every uncached, metadata-only watch of the controllers, made
	// by Wire before it builds them.
	metadata metadata.Interface
}

// MissingAPIs are the optional APIs the API server does not serve, as Prepare found them for
// the selected controllers that have Fallbacks; none before Prepare.
func (o *Options) MissingAPIs() apifeatures.Missing { return o.missingAPIs }

// serviceAccountNamespaceFile is where a Pod finds its namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// NewOptions returns the defaults of every flag.
func NewOptions() *Options {
	return &Options{
		Controllers:            "*",
		MetricsBindAddress:     ":8443",
		SecureMetrics:          true,
		MetricsCertName:        "tls.crt",
		MetricsCertKey:         "tls.key",
		HealthProbeBindAddress: ":8081",
		LeaderElectScope:       ScopeManager,
		LeaseDuration:          DefaultLeaseDuration,
		RenewDeadline:          DefaultRenewDeadline,
		RetryPeriod:            DefaultRetryPeriod,
		// No client-side rate limit unless asked for, as controller-runtime's GetConfig: the API
		// server's Priority and Fairness shares its capacity among clients, while client-go's
		// token bucket, one per REST client and so per kind, throttles a burst of writes long
		// before the API server is busy.
		KubeAPIQPS:       0,
		KubeAPIBurst:     100,
		SyncPeriod:       10 * time.Hour,
		ResyncInterval:   10 * time.Minute,
		SourceBufferSize: sources.DefaultBufferSize,
		TriggerSecure:    true,
		// JSON logs with RFC 3339 times by default; --zap-devel switches to console.
		Zap:                 zap.Options{TimeEncoder: zapcore.RFC3339TimeEncoder},
		IdleRecheckInterval: DefaultIdleRecheckInterval,
		// A weighing lists the selected controllers' primary kinds, metadata-only: at 30,000
		// MyApps, 60 pages once a minute, from the coordinator alone.
		ShardRebalanceInterval: time.Minute,
	}
}

// NamedFlagSet is one section of the manager's flags, as kube-controller-manager's --help
// groups its flags: the manager's by concern, then each controller's own, then logging.
type NamedFlagSet struct {
	// Name titles the section: a concern, or the controller (group) that owns the flags.
	Name string
	// FlagSet holds the section's flags.
	FlagSet *flag.FlagSet
}

// BindFlags registers every flag on fs, with the table in the help of --controllers, and
// returns them in their sections, for --help.
func (o *Options) BindFlags(fs *flag.FlagSet, table []Controller) []NamedFlagSet {
	sections := o.FlagSets(table)
	for _, section := range sections {
		section.FlagSet.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	}
	return sections
}

// FlagSets returns every flag, bound to o and to the controllers' own options, in sections:
// what --help prints and docs/reference/flags.md lists.
func (o *Options) FlagSets(table []Controller) []NamedFlagSet {
	section := func(name string, bind func(fs *flag.FlagSet)) NamedFlagSet {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		bind(fs)
		return NamedFlagSet{Name: name, FlagSet: fs}
	}
	sections := []NamedFlagSet{
		section("Controllers", func(fs *flag.FlagSet) {
			fs.StringVar(&o.Controllers, "controllers", o.Controllers, "Comma-separated controllers to run: '*' runs every controller enabled by default, 'foo' runs foo, '-foo' leaves foo off; a group name runs each of its controllers enabled by default ('-group' leaves all off), and a controller's own name wins over its group's. "+KnownControllers(table)+".")
			fs.StringVar(&o.Concurrency, "concurrency", o.Concurrency, "Comma-separated concurrent reconciles per controller, for example 'myapp=4,verticalscaler=2'; a group name sets each of its controllers; an unlisted controller runs its default (WORKERS in --list-controllers).")
			fs.DurationVar(&o.IdleRecheckInterval, "idle-recheck-interval", o.IdleRecheckInterval, "How often the manager looks again whether each controller left idle at start (its CRD missing, or, for verticalpodautoscaler, the VPA's own components running) still is, and each running one still may run; when one changed it stops with an error naming it, for its restart to follow the change. 0 never looks again.")
			fs.BoolVar(&o.ListControllers, "list-controllers", false, "Print the controller table (name, group, default, workers, kind, watches, indexes, sources) and exit.")
			fs.BoolVar(&o.Version, "version", false, "Print the version, commit, build date and Go version, and exit.")
		}),
		section("Cluster", func(fs *flag.FlagSet) {
			config.RegisterFlags(fs) // --kubeconfig, read by ctrl.GetConfig
			fs.StringVar(&o.WatchNamespaces, "watch-namespaces", o.WatchNamespaces, "Comma-separated namespaces to watch; empty watches all.")
			fs.StringVar(&o.ShardGroup, "shard-group", o.ShardGroup, "Name of a shard group this replica joins (dynamic shards): the group's replicas split the namespaces between them by the API server's hash of the namespace's name, each caching and reconciling only its own, and move them when a replica joins, leaves or fails (Leases NAME-member-<identity>, NAME-plan, NAME-coordinator in --leader-election-namespace, with the --leader-elect-lease-duration, -renew-deadline and -retry-period timings). The API server filters each replica's lists and watches where it serves ShardedListAndWatch; elsewhere every replica receives every object and drops the others'. Cannot go with --leader-elect. Empty: no shard group.")
			fs.DurationVar(&o.ShardRebalanceInterval, "shard-rebalance-interval", o.ShardRebalanceInterval, "How often the coordinator of --shard-group counts the objects of each namespace again, and cuts new ranges when the replicas' shares are more than 1.2 apart; it counts when a replica joins or leaves, too.")
			fs.StringVar(&o.WatchLabelSelector, "watch-label-selector", o.WatchLabelSelector, "Label selector of the objects this manager caches and reconciles, of every kind it watches through its cache (a shard): for example 'sharding.fluxcd.io/key=shard1', or '!sharding.fluxcd.io/key' for the objects of no shard. myapp copies the labels it names from a MyApp to its Deployment and Service. Empty watches every object.")
			fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Client-side limit of queries per second to the API server, per kind; 0 or less means no client-side limit (the API server's Priority and Fairness still applies).")
			fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries to the API server above --kube-api-qps; used only when --kube-api-qps is positive.")
			fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "How often the informers relist every watched object from the API server.")
		}),
		section("Serving", func(fs *flag.FlagSet) {
			fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the metrics endpoint, ':8443' for HTTPS or ':8080' for HTTP; '0' turns it off.")
			fs.BoolVar(&o.SecureMetrics, "metrics-secure", o.SecureMetrics, "Serve metrics over HTTPS with authentication and authorization by the API server.")
			fs.StringVar(&o.MetricsCertPath, "metrics-cert-path", o.MetricsCertPath, "Directory holding the metrics endpoint's serving certificate and key (--metrics-cert-name, --metrics-cert-key), reloaded when they change, for example a cert-manager Secret's mount; empty serves a self-signed certificate generated at start.")
			fs.StringVar(&o.MetricsCertName, "metrics-cert-name", o.MetricsCertName, "File name of the metrics endpoint's certificate in --metrics-cert-path.")
			fs.StringVar(&o.MetricsCertKey, "metrics-cert-key", o.MetricsCertKey, "File name of the metrics endpoint's private key in --metrics-cert-path.")
			fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "Serve metrics over HTTP/2 too; off by default because of the HTTP/2 rapid reset and stream cancellation CVEs.")
			fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of /healthz and /readyz; '0' turns them off.")
		}),
		section("Leader election", func(fs *flag.FlagSet) {
			fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect through Leases which replica runs the controllers, so that of several replicas only one runs each controller (see --leader-elect-scope).")
			fs.StringVar(&o.LeaderElectScope, "leader-elect-scope", o.LeaderElectScope, "What one leader election decides, with --leader-elect: 'manager', one Lease ("+LeaderElectionID+") whose holder runs every controller, or 'controller', one Lease per controller group ("+LeaseNamePrefix+"<group>) so that replicas share the controllers and keep warm caches for the others.")
			fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a candidate waits after the last renewal it saw before it takes a Lease over.")
			fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long a leader keeps trying to renew its Lease before it stops its controllers; shorter than --leader-elect-lease-duration.")
			fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often candidates try to take a Lease and leaders renew theirs.")
			fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Leases; by default the manager's own namespace.")
			fs.StringVar(&o.LeaderElectResourceName, "leader-elect-resource-name", o.LeaderElectResourceName, "Name of this installation's Leases: NAME with --leader-elect-scope=manager, NAME-<group> with 'controller'. Each installation in one namespace, and each shard (--watch-label-selector), needs its own; empty is "+LeaderElectionID+" and "+LeaseNamePrefix+"<group>.")
			fs.StringVar(&o.LeaderElectFixedNamesHolderPrefix, "leader-elect-fixed-names-holder-prefix", o.LeaderElectFixedNamesHolderPrefix, "For a rollout that moves an installation from the fixed Lease names ("+LeaderElectionID+", "+LeaseNamePrefix+"<group>) to --leader-elect-resource-name: the start of its replicas' identities (their Pods' names, for example '<deployment>-'). While a replica whose identity starts with it holds a Lease of the fixed names, and for a lease duration after this manager last saw one so held (or after its start), this manager takes no Lease; it then deletes the Leases of the fixed names it saw held that way. A Lease of the fixed names held by another installation delays it by that lease duration from its start only, and is not deleted; without any, it does not wait. Empty: no such wait. Needs --leader-elect-resource-name.")
		}),
		section("Channel sources", func(fs *flag.FlagSet) {
			fs.DurationVar(&o.ResyncInterval, "resync-interval", o.ResyncInterval, "How often the periodic source re-enqueues every primary object of each controller; 0 turns it off.")
			fs.IntVar(&o.SourceBufferSize, "source-buffer-size", o.SourceBufferSize, "Events each controller's channel of each source holds before new ones are dropped and counted.")
			fs.StringVar(&o.TriggerBindAddress, "trigger-bind-address", o.TriggerBindAddress, "Address of the HTTP trigger (POST /trigger/{controller} with {\"namespace\", \"name\"} or a list), for example ':8082'; empty turns it off. Needs --trigger-token-file.")
			fs.StringVar(&o.TriggerTokenFile, "trigger-token-file", o.TriggerTokenFile, "File holding the bearer token that callers of the HTTP trigger must present; read at start.")
			fs.BoolVar(&o.TriggerSecure, "trigger-secure", o.TriggerSecure, "Serve the HTTP trigger over HTTPS (HTTP/1.1 only).")
			fs.StringVar(&o.TriggerCertDir, "trigger-cert-dir", o.TriggerCertDir, "Directory holding tls.crt and tls.key for the HTTP trigger, reloaded when they change; empty serves a self-signed certificate generated at start.")
		}),
	}
	for _, c := range table {
		if c.Flags == nil || slices.ContainsFunc(sections, func(s NamedFlagSet) bool { return s.Name == c.leaseGroup() }) {
			continue
		}
		sections = append(sections, section(c.leaseGroup(), c.Flags.AddFlags))
	}
	return append(sections, section("Logging", o.Zap.BindFlags), section("Stakater Reloader's names of the manager's settings", o.addReloaderFlags))
}

// controllerFlags returns the controllers' own options in the table, each once: the rows of a
// group share theirs.
func controllerFlags(table []Controller) []ControllerFlags {
	var out []ControllerFlags
	for _, c := range table {
		if c.Flags != nil && !slices.Contains(out, c.Flags) {
			out = append(out, c.Flags)
		}
	}
	return out
}

// Selection is what the flags resolve to: the controllers to run and their concurrency.
type Selection struct {
	Controllers []Controller
	Concurrency map[string]int
	// Runnables are what the selected controllers' options run beside them (Preparer), on
	// every replica.
	Runnables []manager.Runnable
	// Idle are the selected controllers that Prepare found with nothing to do, and why: their
	// readiness checks say so.
	Idle map[string]string
}

// Prepare reads the cluster for what must be known before the manager is made: each selected
// controller's options that ask for it (Preparer), and whether the API server serves the
// primary kind of each optional controller. It returns the selection without the controllers
// that are idle (an optional kind not served, or Controller.Idle), each said once in log.
func (o *Options) Prepare(ctx context.Context, cfg *rest.Config, sel Selection, log logr.Logger) (Selection, error) {
	ctx = logr.NewContext(ctx, log)
	namespaceSet, err := o.namespaces()
	if err != nil {
		return Selection{}, err
	}
	namespaces := slices.Sorted(maps.Keys(namespaceSet))
	var prepared []ControllerFlags
	for _, c := range sel.Controllers {
		p, ok := c.Flags.(Preparer)
		if !ok || slices.Contains(prepared, c.Flags) {
			continue
		}
		prepared = append(prepared, c.Flags)
		run, err := p.Prepare(ctx, cfg, namespaces)
		if err != nil {
			return Selection{}, fmt.Errorf("preparing controller %s: %w", c.Name, err)
		}
		if run != nil {
			sel.Runnables = append(sel.Runnables, run)
		}
	}
	// One discovery client, made when a controller first needs one.
	var shared *discovery.DiscoveryClient
	discoveryClient := func() (*discovery.DiscoveryClient, error) {
		if shared == nil {
			if shared, err = newDiscovery(cfg); err != nil {
				return nil, err
			}
		}
		return shared, nil
	}
	active := make([]Controller, 0, len(sel.Controllers))
	sel.Idle = map[string]string{}
	recheck := &idleRecheck{interval: o.IdleRecheckInterval, namespaces: namespaces, discovery: discoveryClient, decided: map[string]string{}}
	for _, c := range sel.Controllers {
		if c.Idle == nil && !c.Optional {
			active = append(active, c)
			continue
		}
		reason, err := idleReason(ctx, c, namespaces, discoveryClient, transient.StartBackoff)
		var cannotTell *idleUnknownError
		switch {
		case errors.As(err, &cannotTell):
			reason = err.Error()
		case err != nil:
			return Selection{}, fmt.Errorf("controller %s: %w", c.Name, err)
		}
		recheck.controllers = append(recheck.controllers, c)
		recheck.decided[c.Name] = reason
		if reason != "" {
			log.Info("Controller idle", "controller", c.Name, "reason", reason)
			sel.Idle[c.Name] = reason
			continue
		}
		active = append(active, c)
	}
	if len(recheck.controllers) > 0 && recheck.interval > 0 {
		sel.Runnables = append(sel.Runnables, recheck)
	}
	sel.Controllers = active
	member, err := o.prepareDynamicShards(ctx, cfg, sel, log)
	if err != nil {
		return Selection{}, err
	}
	if member != nil {
		sel.Runnables = append(sel.Runnables, member)
	}
	if err := o.findFallbacks(ctx, discoveryClient, sel.Controllers, log); err != nil {
		return Selection{}, err
	}
	return sel, nil
}

// newDiscovery returns a discovery client without client-side rate limit: it makes a request
// or two, once.
func newDiscovery(cfg *rest.Config) (*discovery.DiscoveryClient, error) {
	c, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	return c, nil
}

// Resolve validates the flags that name controllers and the other settings that a bad value
// would otherwise only reveal later, at start.
func (o *Options) Resolve(table []Controller) (Selection, error) {
	selected, err := Select(table, strings.Split(o.Controllers, ","))
	if err != nil {
		return Selection{}, err
	}
	concurrency, err := ParseConcurrency(table, o.Concurrency)
	if err != nil {
		return Selection{}, err
	}
	if _, err := o.namespaces(); err != nil {
		return Selection{}, err
	}
	if _, err := o.labelSelector(); err != nil {
		return Selection{}, err
	}
	switch {
	case math.IsNaN(o.KubeAPIQPS) || math.IsInf(o.KubeAPIQPS, 0):
		return Selection{}, fmt.Errorf("--kube-api-qps must be a finite number, got %v", o.KubeAPIQPS)
	case o.KubeAPIBurst < 1:
		return Selection{}, fmt.Errorf("--kube-api-burst must be at least 1, got %d", o.KubeAPIBurst)
	case o.IdleRecheckInterval < 0:
		return Selection{}, fmt.Errorf("--idle-recheck-interval must not be negative, got %s", o.IdleRecheckInterval)
	case o.SyncPeriod <= 0:
		return Selection{}, fmt.Errorf("--sync-period must be positive, got %s", o.SyncPeriod)
	case o.ResyncInterval < 0:
		return Selection{}, fmt.Errorf("--resync-interval must not be negative, got %s", o.ResyncInterval)
	case o.SourceBufferSize < 1:
		return Selection{}, fmt.Errorf("--source-buffer-size must be at least 1, got %d", o.SourceBufferSize)
	case o.TriggerBindAddress != "" && o.TriggerTokenFile == "":
		return Selection{}, errors.New("--trigger-bind-address needs --trigger-token-file: the HTTP trigger never runs without a token")
	}
	// Every controller's, selected or not, as kube-controller-manager validates them: a bad
	// value is a mistake whichever controllers run.
	for _, flags := range controllerFlags(table) {
		if err := flags.Validate(); err != nil {
			return Selection{}, err
		}
	}
	if err := o.validateShardGroup(); err != nil {
		return Selection{}, err
	}
	if err := o.validateLeaderElection(); err != nil {
		return Selection{}, err
	}
	if err := o.validateMetricsCert(); err != nil {
		return Selection{}, err
	}
	return Selection{Controllers: selected, Concurrency: concurrency}, nil
}

// validateMetricsCert checks the flags of the metrics endpoint's certificate.
func (o *Options) validateMetricsCert() error {
	switch {
	case o.MetricsCertPath == "":
		return nil
	case !o.SecureMetrics:
		return errors.New("--metrics-cert-path needs --metrics-secure: a certificate is served over HTTPS only")
	case o.MetricsCertName == "" || o.MetricsCertKey == "":
		return errors.New("--metrics-cert-name and --metrics-cert-key must name files in --metrics-cert-path")
	}
	return nil
}

// CheckMetricsCert reads the metrics endpoint's certificate and key, when --metrics-cert-path
// names them, and says what is wrong with them. controller-runtime's metrics server serves a
// self-signed certificate when the files are missing, without a word: a scraper that verifies
// the certificate would then fail on every scrape, far from the cause. Resolve checks the flags;
// this checks the files, on the machine that runs the manager.
func (o *Options) CheckMetricsCert() error {
	if o.MetricsCertPath == "" {
		return nil
	}
	certFile, keyFile := o.metricsCertFiles()
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return fmt.Errorf("--metrics-cert-path: reading the metrics certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return nil
}

// metricsCertFiles returns the paths of the metrics endpoint's certificate and key.
func (o *Options) metricsCertFiles() (certFile, keyFile string) {
	return filepath.Join(o.MetricsCertPath, o.MetricsCertName), filepath.Join(o.MetricsCertPath, o.MetricsCertKey)
}

// validateLeaderElection checks the scope and the timing of leader election, with client-go's
// own rules: a leader must give up (renew deadline) before a candidate may take over (lease
// duration), and must have tried to renew more than once by then.
func (o *Options) validateLeaderElection() error {
	switch {
	case o.LeaderElectScope != ScopeManager && o.LeaderElectScope != ScopeController:
		return fmt.Errorf("--leader-elect-scope must be %s or %s, got %q", ScopeManager, ScopeController, o.LeaderElectScope)
	case o.LeaderElectScope == ScopeController && !o.LeaderElect:
		return fmt.Errorf("--leader-elect-scope=%s needs --leader-elect: without it every replica runs every controller", ScopeController)
	case o.RetryPeriod <= 0:
		return fmt.Errorf("--leader-elect-retry-period must be positive, got %s", o.RetryPeriod)
	case o.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(o.RetryPeriod)):
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than %v times --leader-elect-retry-period (%s)", o.RenewDeadline, leaderelection.JitterFactor, o.RetryPeriod)
	case o.LeaseDuration <= o.RenewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s): a leader must stop before another may start", o.LeaseDuration, o.RenewDeadline)
	case o.LeaseDuration%time.Second != 0:
		return fmt.Errorf("--leader-elect-lease-duration must be a whole number of seconds (a Lease stores seconds), got %s", o.LeaseDuration)
	case o.LeaderElect && o.WatchLabelSelector != "" && o.LeaderElectResourceName == "":
		return errors.New("--watch-label-selector with --leader-elect needs --leader-elect-resource-name: the replicas of one shard must not compete for the Leases of another")
	}
	if o.LeaderElectFixedNamesHolderPrefix != "" && o.LeaderElectResourceName == "" {
		return errors.New("--leader-elect-fixed-names-holder-prefix needs --leader-elect-resource-name: without it this manager's Leases are the fixed names themselves")
	}
	if o.LeaderElectResourceName != "" {
		if errs := validation.IsDNS1123Subdomain(o.LeaderElectResourceName); len(errs) > 0 {
			return fmt.Errorf("--leader-elect-resource-name: %q is not a Lease name: %s", o.LeaderElectResourceName, strings.Join(errs, "; "))
		}
	}
	return nil
}

// managerLeaseName is the name of the Lease of --leader-elect-scope=manager.
func (o *Options) managerLeaseName() string { return managerLeaseName(o.LeaderElectResourceName) }

// groupLeasePrefix starts the name of each group's Lease with --leader-elect-scope=controller.
func (o *Options) groupLeasePrefix() string { return groupLeasePrefix(o.LeaderElectResourceName) }

// managerLeaseName is the name of the Lease of --leader-elect-scope=manager when
// --leader-elect-resource-name is resourceName.
func managerLeaseName(resourceName string) string {
	if resourceName != "" {
		return resourceName
	}
	return LeaderElectionID
}

// groupLeasePrefix starts the name of each group's Lease with --leader-elect-scope=controller
// when --leader-elect-resource-name is resourceName.
func groupLeasePrefix(resourceName string) string {
	if resourceName != "" {
		return resourceName + "-"
	}
	return LeaseNamePrefix
}

// perControllerLeases says whether each controller group is elected through a Lease of its own.
func (o *Options) perControllerLeases() bool {
	return o.LeaderElect && o.LeaderElectScope == ScopeController
}

// managerNamespace is the namespace the manager runs in: $POD_NAMESPACE (the manifests set it
// from the downward API), else the ServiceAccount's, else the leader election's, else
// "default", for `make run` on a local cluster.
func (o *Options) managerNamespace() string {
	if ns := strings.TrimSpace(os.Getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	if data, err := os.ReadFile(serviceAccountNamespaceFile); err == nil && strings.TrimSpace(string(data)) != "" {
		return strings.TrimSpace(string(data))
	}
	if o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace
	}
	return metav1.NamespaceDefault
}

// namespaces parses --watch-namespaces.
func (o *Options) namespaces() (map[string]cache.Config, error) {
	if strings.TrimSpace(o.WatchNamespaces) == "" {
		return nil, nil
	}
	out := map[string]cache.Config{}
	for _, ns := range strings.Split(o.WatchNamespaces, ",") {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		out[ns] = cache.Config{}
	}
	return out, nil
}

// labelSelector parses --watch-label-selector; nil when it is empty.
func (o *Options) labelSelector() (labels.Selector, error) {
	if strings.TrimSpace(o.WatchLabelSelector) == "" {
		return nil, nil
	}
	selector, err := labels.Parse(o.WatchLabelSelector)
	if err != nil {
		return nil, fmt.Errorf("--watch-label-selector: %w", err)
	}
	return selector, nil
}

// shardLabels returns the label keys --watch-label-selector names: the labels that decide a
// MyApp's shard, which myapp copies to the objects it creates so that they fall in the same
// shard.
func (o *Options) shardLabels() []string {
	selector, _ := o.labelSelector()
	if selector == nil {
		return nil
	}
	requirements, _ := selector.Requirements()
	var keys []string
	for _, r := range requirements {
		if !slices.Contains(keys, r.Key()) {
			keys = append(keys, r.Key())
		}
	}
	return keys
}

// NewScheme returns a scheme with the built-in kinds and Switchboard's.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	return scheme
}

// RESTConfig applies the client-side rate limit to cfg: --kube-api-qps and --kube-api-burst when
// the QPS is positive, else none. client-go reads a QPS of 0 as its default of 5, so "none" is
// written as -1, as controller-runtime's GetConfig does.
func (o *Options) RESTConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if o.KubeAPIQPS <= 0 {
		cfg.QPS, cfg.Burst = -1, 0
		return cfg
	}
	cfg.QPS = float32(o.KubeAPIQPS)
	cfg.Burst = o.KubeAPIBurst
	return cfg
}

// ManagerOptions returns the manager's options for the selected controllers. Call Resolve
// first: it validates what this assumes valid.
func (o *Options) ManagerOptions(scheme *runtime.Scheme, sel Selection) ctrl.Options {
	namespaces, _ := o.namespaces()
	var tlsOpts []func(*tls.Config)
	if !o.EnableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metrics := metricsserver.Options{
		BindAddress:   o.MetricsBindAddress,
		SecureServing: o.SecureMetrics,
		TLSOpts:       tlsOpts,
		// With a certificate directory, controller-runtime's certwatcher serves the files and
		// reloads them when they change (cert-manager renews them in place); without one, a
		// self-signed certificate made at start (Resolve made sure the files are readable).
		CertDir:  o.MetricsCertPath,
		CertName: o.MetricsCertName,
		KeyName:  o.MetricsCertKey,
		// Uncompressed: the page is small, while each gzip writer the handler keeps pooled
		// between scrapes holds its compression tables (README, Performance, has the figure).
		HandlerOpts: []func(*promhttp.HandlerOpts){func(h *promhttp.HandlerOpts) { h.DisableCompression = true }},
	}
	if o.SecureMetrics {
		metrics.FilterProvider = metricsauth.Filter
	}
	return ctrl.Options{
		Scheme:  scheme,
		Metrics: metrics,
		// Wire serves the probes itself, so that readiness can say which controllers this
		// replica leads (probes.go).
		HealthProbeBindAddress: "0",
		// With a Lease per controller group the manager itself runs unelected, and Wire elects
		// each group.
		LeaderElection:          o.LeaderElect && !o.perControllerLeases(),
		LeaderElectionID:        o.managerLeaseName(),
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaseDuration:           &o.LeaseDuration,
		RenewDeadline:           &o.RenewDeadline,
		RetryPeriod:             &o.RetryPeriod,
		// A manager stopping on purpose hands the lease over at once instead of making the
		// next leader wait out the lease.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         o.cacheOptions(namespaces, sel.Controllers),
		// A controller whose primary kind is another project's CRD reads it as unstructured
		// objects (the configmapwatcher's Argo Rollouts): from the cache, like every kind.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}
}

// cacheOptions decides, per kind the selected controllers watch, what the cache keeps. Only
// the kinds it transforms are named: naming a kind makes the cache look it up at start, and
// the CRD of a controller that is not selected need not be installed.
func (o *Options) cacheOptions(namespaces map[string]cache.Config, selected []Controller) cache.Options {
	// Resolve has parsed it.
	selector, _ := o.labelSelector()
	keepManagedFields := map[string]bool{}
	unsharded := map[string]bool{}
	watchers := map[string]int{}
	for _, c := range selected {
		for _, obj := range c.ReadsManagedFieldsOf {
			keepManagedFields[kindOf(obj)] = true
		}
		for _, obj := range c.Unsharded {
			unsharded[kindOf(obj)] = selector != nil
		}
		for _, obj := range c.watchedObjects() {
			watchers[kindOf(obj)]++
		}
	}
	managerNamespaces := slices.Sorted(maps.Keys(namespaces))
	byObject := map[client.Object]cache.ByObject{}
	seen := map[string]bool{}
	for _, c := range selected {
		for _, obj := range c.watchedObjects() {
			kind := kindOf(obj)
			if seen[kind] {
				continue
			}
			entry := cache.ByObject{Transform: cacheTransform(keepManagedFields[kind])}
			if watchers[kind] == 1 {
				if trim := c.trim(kind); trim != nil {
					entry.Transform = trim
				}
				if scope := c.cacheScope(kind); scope != nil {
					narrowed := scope(managerNamespaces)
					entry.Namespaces, entry.Field = narrowed.Namespaces, narrowed.Field
				}
			}
			if unsharded[kind] {
				entry.Label = labels.Everything()
			}
			if entry.Transform == nil && entry.Namespaces == nil && entry.Field == nil && entry.Label == nil {
				continue
			}
			seen[kind] = true
			byObject[obj] = entry
		}
	}
	var newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer
	if o.dynamic != nil {
		newInformer = o.dynamic.newInformer
	}
	return cache.Options{
		NewInformer:       newInformer,
		SyncPeriod:        &o.SyncPeriod,
		DefaultNamespaces: namespaces,
		// A shard's manager caches only the shard's objects, of every kind: the primary objects
		// and what they own (myapp labels its Deployments and Services like their MyApp), and
		// the Deployments VerticalScalers name, which carry their VerticalScaler's labels.
		DefaultLabelSelector: selector,
		ByObject:             byObject,
	}
}

// cacheTransform returns what the cache does to an object of obj's kind before storing it, or
// nil to store it whole: objects lose their managed fields unless keepManagedFields, when a
// selected controller reads them back.
func cacheTransform(keepManagedFields bool) toolscache.TransformFunc {
	if keepManagedFields {
		return nil
	}
	return cache.TransformStripManagedFields()
}
