package shards

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The label and annotations of a shard group's Leases.
const (
	// GroupLabel names the shard group of a member's Lease and of the plan's.
	GroupLabel = "shards.app.example.com/group"
	// rangesAnnotation is the ranges a member holds (its claim), "first-last" in hex, comma
	// separated.
	rangesAnnotation = "shards.app.example.com/ranges"
	// observedAnnotation is the generation of the plan a member follows: it holds nothing
	// outside that plan's share of it.
	observedAnnotation = "shards.app.example.com/observed-generation"
	// planAnnotation is the plan, as JSON, on the plan's Lease.
	planAnnotation = "shards.app.example.com/plan"
)

// Plan is what the members of a shard group split the space by: every member computes its
// share as Assign(Slots, Members), the same for all.
type Plan struct {
	// Generation counts the plans; a member acts on a plan once every live member follows it.
	Generation int64 `json:"generation"`
	// Members are the identities of the live members when it was made.
	Members []string `json:"members"`
	// Slots cut the space by the namespaces' weights when it was made.
	Slots []Slot `json:"slots"`
}

// share is the ranges of member under p.
func (p *Plan) share(member string, slack float64) Ranges {
	if p == nil || !slices.Contains(p.Members, member) {
		return nil
	}
	return Assign(p.Slots, p.Members, slack)[member]
}

// Holder is what a member's ranges govern: the reconciles and caches of its controllers.
type Holder interface {
	// Release narrows what is acted on to ranges, and returns once nothing outside them is
	// being acted on any more.
	Release(ctx context.Context, ranges Ranges) error
	// Acquire widens what is acted on to ranges, which this member now holds.
	Acquire(ranges Ranges)
}

// Config is a member's settings.
type Config struct {
	// Group names the shard group: its Leases are <group>-member-<identity> (each member's),
	// <group>-plan and <group>-coordinator, in Namespace.
	Group, Namespace, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are the member's and the coordinator's
	// Lease timings, as leader election's.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// SlotCount is how many slots a plan cuts the space into; Slack the bound of Assign.
	SlotCount int
	Slack     float64
	// RebalanceInterval is how often the coordinator weighs the namespaces again, and makes a
	// new plan when the members' loads drift more than 1.2 apart.
	RebalanceInterval time.Duration
	// Weights lists the namespaces that hold objects of the sharded kinds, with their counts:
	// the coordinator's view of the load.
	Weights func(ctx context.Context) ([]Namespace, error)
	// ForgetAfter is how long a member's Lease must have stood still for the coordinator to
	// delete it; 0 never.
	ForgetAfter time.Duration
}

// Member is one replica of a shard group: it holds a Lease of the group, follows the group's
// plan, and moves ranges so that two members never act on one namespace at once. A range
// leaves a member only after its Holder stopped acting on it and its claim (its Lease's ranges)
// dropped it; it comes to a member only once every live member follows the same plan, whose
// shares are disjoint, and the member's claim holds it. A member that cannot renew its Lease
// within RenewDeadline releases everything and stops, before the others, who count it dead
// LeaseDuration after its Lease last changed, take its ranges.
type Member struct {
	cfg    Config
	client kubernetes.Interface
	holder Holder
	log    logr.Logger

	mu sync.Mutex
	// held is the claim; observed the plan generation this member follows.
	held     Ranges
	observed int64
	// changed is when each Lease of the group was last seen to change, by this member's clock.
	changed map[string]seen
	// lastRenew is when the member's Lease was last written.
	lastRenew time.Time
	trigger   chan struct{}
}

// seen is a Lease's resource version and when this member saw it take that version.
type seen struct {
	resourceVersion string
	at              time.Time
}

// NewMember returns a member of cfg.Group that governs holder.
func NewMember(cfg Config, client kubernetes.Interface, holder Holder, log logr.Logger) (*Member, error) {
	switch {
	case cfg.Group == "" || cfg.Namespace == "" || cfg.Identity == "":
		return nil, errors.New("a shard group member needs a group, a namespace and an identity")
	case cfg.LeaseDuration <= cfg.RenewDeadline || cfg.RenewDeadline <= cfg.RetryPeriod || cfg.RetryPeriod <= 0:
		return nil, fmt.Errorf("shard group %s: want lease duration %s > renew deadline %s > retry period %s > 0", cfg.Group, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	case cfg.SlotCount < 1 || cfg.Weights == nil:
		return nil, fmt.Errorf("shard group %s: want at least one slot and a source of weights", cfg.Group)
	}
	// The identity names the member's Lease: a leader election identity such as host_suffix
	// becomes host-suffix.
	cfg.Identity = strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, cfg.Identity), "-.")
	if errs := validation.IsDNS1123Subdomain(MemberLeaseName(cfg.Group, cfg.Identity)); cfg.Identity == "" || len(errs) > 0 {
		return nil, fmt.Errorf("shard group %s: identity %q cannot name a Lease: %s", cfg.Group, cfg.Identity, strings.Join(errs, "; "))
	}
	return &Member{cfg: cfg, client: client, holder: holder, log: log.WithValues("shardGroup", cfg.Group),
		changed: map[string]seen{}, trigger: make(chan struct{}, 1)}, nil
}

// MemberLeaseName is the name of a member's Lease; identity as NewMember made it fit a name.
func MemberLeaseName(group, identity string) string { return group + "-member-" + identity }

// planLeaseName is the name of the Lease that carries a group's plan.
func planLeaseName(group string) string { return group + "-plan" }

// Held returns the ranges this member holds.
func (m *Member) Held() Ranges {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held
}

// NeedLeaderElection is false: every replica is a member.
func (m *Member) NeedLeaderElection() bool { return false }

// Start runs the member until ctx ends, then releases everything and deletes its Lease, so
// that the others take its ranges without waiting for it to expire. It returns an error when
// the member could not renew its Lease in time, having released everything.
func (m *Member) Start(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(m.client, 0, informers.WithNamespace(m.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = GroupLabel + "=" + m.cfg.Group }))
	leases := factory.Coordination().V1().Leases()
	if _, err := leases.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.seeChange(obj) },
		UpdateFunc: func(_, obj any) { m.seeChange(obj) },
		DeleteFunc: func(any) { m.poke() },
	}); err != nil {
		return fmt.Errorf("shard group %s: watching its Leases: %w", m.cfg.Group, err)
	}
	informerCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInformers()
	factory.Start(informerCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), leases.Informer().HasSynced) {
		return nil
	}
	lister := leases.Lister().Leases(m.cfg.Namespace)
	if err := m.renew(ctx); err != nil {
		return fmt.Errorf("shard group %s: creating this member's Lease: %w", m.cfg.Group, err)
	}
	coordinatorCtx, stopCoordinator := context.WithCancel(ctx)
	coordinatorDone := m.runCoordinator(coordinatorCtx, lister)
	err := m.run(ctx, lister)
	// Release first: a member that could not renew must stop acting before its Lease expires.
	m.leave(err == nil)
	stopCoordinator()
	<-coordinatorDone
	return err
}

// seeChange records when a Lease of the group was seen to change, by this member's clock, and
// asks the loop for another step.
func (m *Member) seeChange(obj any) {
	if l, ok := obj.(*coordinationv1.Lease); ok {
		m.mu.Lock()
		m.changed[l.Name] = seen{resourceVersion: l.ResourceVersion, at: time.Now()}
		m.mu.Unlock()
	}
	m.poke()
}

// poke asks the loop for another step.
func (m *Member) poke() {
	select {
	case m.trigger <- struct{}{}:
	default:
	}
}

// run renews the member's Lease and follows the plan until ctx ends or a renewal is too late.
func (m *Member) run(ctx context.Context, lister coordinationlisters.LeaseNamespaceLister) error {
	ticker := time.NewTicker(m.cfg.RetryPeriod / 2)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-m.trigger:
		}
		m.mu.Lock()
		due := time.Since(m.lastRenew) >= m.cfg.RetryPeriod
		late := time.Since(m.lastRenew) >= m.cfg.RenewDeadline
		m.mu.Unlock()
		if late {
			return fmt.Errorf("shard group %s: this member's Lease was not renewed within %s; it released its ranges", m.cfg.Group, m.cfg.RenewDeadline)
		}
		if due {
			if err := m.renew(ctx); err != nil && ctx.Err() == nil {
				m.log.Info("Renewing the shard group Lease failed; retrying", "error", err.Error())
			}
		}
		if err := m.follow(ctx, lister); err != nil && ctx.Err() == nil {
			m.log.Info("Following the shard plan failed; retrying", "error", err.Error())
		}
	}
}

// leave releases everything and, after a planned stop, deletes the member's Lease.
func (m *Member) leave(planned bool) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RenewDeadline)
	defer cancel()
	if err := m.holder.Release(ctx, nil); err != nil {
		m.log.Error(err, "Releasing the shard ranges on leaving failed")
		return
	}
	m.mu.Lock()
	m.held = nil
	m.mu.Unlock()
	if !planned {
		return
	}
	if err := m.client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, MemberLeaseName(m.cfg.Group, m.cfg.Identity), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		m.log.Error(err, "Deleting the shard group Lease on leaving failed; the others take its ranges once it expires")
	}
}

// follow takes one step towards the plan's share: it releases what the share does not hold,
// says which plan it follows, and, once every live member follows that plan, acquires the rest
// of its share.
func (m *Member) follow(ctx context.Context, lister coordinationlisters.LeaseNamespaceLister) error {
	plan, err := readPlan(lister, m.cfg.Group)
	if err != nil || plan == nil {
		return err
	}
	share := plan.share(m.cfg.Identity, m.cfg.Slack)
	m.mu.Lock()
	held, observed := m.held, m.observed
	m.mu.Unlock()
	if kept := intersect(held, share); !slices.Equal(kept, held) {
		if err := m.holder.Release(ctx, kept); err != nil {
			return fmt.Errorf("releasing ranges: %w", err)
		}
		m.setHeld(kept, observed)
		held = kept
		if err := m.renew(ctx); err != nil {
			return err
		}
	}
	if observed != plan.Generation {
		m.setHeld(held, plan.Generation)
		if err := m.renew(ctx); err != nil {
			return err
		}
	}
	if slices.Equal(held, share) {
		return nil
	}
	others, err := m.liveOthers(lister)
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.observed != plan.Generation || overlaps(o.held, share) {
			// Wait for it: its next renewal or its expiry pokes this loop.
			return nil
		}
	}
	m.setHeld(share, plan.Generation)
	if err := m.renew(ctx); err != nil {
		// The claim is not recorded: act on nothing new.
		m.setHeld(held, plan.Generation)
		return err
	}
	m.holder.Acquire(share)
	m.log.Info("Shard ranges acquired", "generation", plan.Generation, "ranges", len(share))
	return nil
}

func (m *Member) setHeld(held Ranges, observed int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held, m.observed = held, observed
}

// otherMember is what another live member's Lease says.
type otherMember struct {
	identity string
	held     Ranges
	observed int64
}

// liveOthers are the other members whose Leases changed within the lease duration.
func (m *Member) liveOthers(lister coordinationlisters.LeaseNamespaceLister) ([]otherMember, error) {
	all, err := lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []otherMember
	for _, l := range all {
		identity, ok := strings.CutPrefix(l.Name, m.cfg.Group+"-member-")
		if !ok || identity == m.cfg.Identity {
			continue
		}
		// The informer's handler records each change as it comes; a version not recorded yet
		// is one that comes now.
		s, known := m.changed[l.Name]
		if !known || s.resourceVersion != l.ResourceVersion {
			s = seen{resourceVersion: l.ResourceVersion, at: now}
			m.changed[l.Name] = s
		}
		if now.Sub(s.at) >= m.cfg.LeaseDuration {
			continue
		}
		held, err := parseRanges(l.Annotations[rangesAnnotation])
		if err != nil {
			return nil, fmt.Errorf("the shard group Lease %s: %w", l.Name, err)
		}
		observed, _ := strconv.ParseInt(l.Annotations[observedAnnotation], 10, 64)
		out = append(out, otherMember{identity: identity, held: held, observed: observed})
	}
	return out, nil
}

// renew writes the member's Lease: its renewal, its claim and the plan it follows.
func (m *Member) renew(ctx context.Context) error {
	m.mu.Lock()
	held, observed := m.held, m.observed
	m.mu.Unlock()
	name := MemberLeaseName(m.cfg.Group, m.cfg.Identity)
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(m.cfg.LeaseDuration / time.Second)
	annotations := map[string]string{rangesAnnotation: formatRanges(held), observedAnnotation: strconv.FormatInt(observed, 10)}
	leases := m.client.CoordinationV1().Leases(m.cfg.Namespace)
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.cfg.Namespace,
			Labels: map[string]string{GroupLabel: m.cfg.Group}, Annotations: annotations},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &m.cfg.Identity, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now}}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	case err == nil:
		lease.Annotations = annotations
		lease.Labels = map[string]string{GroupLabel: m.cfg.Group}
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &m.cfg.Identity, &seconds, &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing Lease %s: %w", name, err)
	}
	m.mu.Lock()
	m.lastRenew = now.Time
	m.mu.Unlock()
	return nil
}

// runCoordinator runs, in the background until ctx ends, for the Lease <group>-coordinator;
// while it holds it, it makes the group's plans. The returned channel is closed once it ended.
func (m *Member) runCoordinator(ctx context.Context, lister coordinationlisters.LeaseNamespaceLister) <-chan struct{} {
	done := make(chan struct{})
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: m.cfg.Namespace, Name: m.cfg.Group + "-coordinator"},
		Client:     m.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: m.cfg.Identity},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: m.cfg.LeaseDuration, RenewDeadline: m.cfg.RenewDeadline, RetryPeriod: m.cfg.RetryPeriod,
		ReleaseOnCancel: true, Name: m.cfg.Group + "-coordinator",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { m.coordinate(ctx, lister) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		// The timings were checked by NewMember.
		panic(err)
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			elector.Run(ctx)
		}
	}()
	return done
}

// coordinate makes a new plan whenever the live members change, and when a rebalance finds
// their loads more than 1.2 apart, until ctx ends.
func (m *Member) coordinate(ctx context.Context, lister coordinationlisters.LeaseNamespaceLister) {
	log := m.log.WithName("coordinator")
	lastWeighed := time.Time{}
	ticker := time.NewTicker(m.cfg.RetryPeriod / 2)
	defer ticker.Stop()
	for {
		plan, err := readPlan(lister, m.cfg.Group)
		if err == nil {
			var next *Plan
			var weighed bool
			next, weighed, err = m.nextPlan(ctx, lister, plan, time.Since(lastWeighed) >= m.cfg.RebalanceInterval)
			if weighed {
				lastWeighed = time.Now()
			}
			if next != nil && err == nil {
				if err = m.writePlan(ctx, plan, next); err == nil {
					log.Info("Shard plan made", "generation", next.Generation, "members", next.Members, "slots", len(next.Slots))
				}
			}
		}
		if err != nil && ctx.Err() == nil {
			log.Info("Making the shard plan failed; retrying", "error", err.Error())
		}
		m.forgetDead(ctx, lister, log)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// nextPlan returns the plan that should follow current, nil when current stands: the live
// members changed, or weigh is set and the members' loads under current, by fresh weights, are
// more than 1.2 apart. A change of members keeps the slots, so that only what must move moves,
// unless the new members' loads under them, by fresh weights, would be more than 1.2 apart (the
// slots were cut when the namespaces held little, or for fewer members); new slots are cut
// then. weighed says it weighed the namespaces.
func (m *Member) nextPlan(ctx context.Context, lister coordinationlisters.LeaseNamespaceLister, current *Plan, weigh bool) (next *Plan, weighed bool, err error) {
	others, err := m.liveOthers(lister)
	if err != nil {
		return nil, false, err
	}
	members := []string{m.cfg.Identity}
	for _, o := range others {
		members = append(members, o.identity)
	}
	slices.Sort(members)
	generation := int64(1)
	if current != nil {
		generation = current.Generation + 1
	}
	membersChanged := current != nil && !slices.Equal(current.Members, members)
	if current != nil && !membersChanged && !weigh {
		return nil, false, nil
	}
	// kept is the next plan over the current slots.
	var kept *Plan
	if current != nil {
		kept = &Plan{Generation: generation, Members: members, Slots: current.Slots}
	}
	namespaces, err := m.cfg.Weights(ctx)
	if err != nil {
		if membersChanged {
			// The members must not wait for the weighing: the slots stay.
			m.log.Info("Weighing the namespaces failed; the shard plan keeps its slots", "error", err.Error())
			return kept, false, nil
		}
		return nil, true, fmt.Errorf("weighing the namespaces: %w", err)
	}
	if kept != nil && !unbalanced(kept, namespaces, m.cfg.Slack) {
		if membersChanged {
			return kept, true, nil
		}
		return nil, true, nil
	}
	return &Plan{Generation: generation, Members: members, Slots: Slots(namespaces, m.cfg.SlotCount)}, true, nil
}

// forgetDead deletes the Leases of members that have not changed for ForgetAfter, by this
// member's clock: those of replicas that crashed (one that stops on purpose deletes its own).
// Only the version seen is deleted, so a member that came back keeps its Lease.
func (m *Member) forgetDead(ctx context.Context, lister coordinationlisters.LeaseNamespaceLister, log logr.Logger) {
	if m.cfg.ForgetAfter <= 0 {
		return
	}
	all, err := lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, l := range all {
		if !strings.HasPrefix(l.Name, m.cfg.Group+"-member-") || l.Name == MemberLeaseName(m.cfg.Group, m.cfg.Identity) {
			continue
		}
		m.mu.Lock()
		s, known := m.changed[l.Name]
		m.mu.Unlock()
		if !known || s.resourceVersion != l.ResourceVersion || time.Since(s.at) < m.cfg.ForgetAfter {
			continue
		}
		rv := l.ResourceVersion
		err := m.client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err == nil {
			log.Info("Deleted the Lease of a member gone since", "lease", l.Name, "since", s.at.Format(time.RFC3339))
		}
	}
}

// unbalanced says whether the members of plan hold loads, by namespaces' weights, more than
// 1.2 apart.
func unbalanced(plan *Plan, namespaces []Namespace, slack float64) bool {
	assignment := Assign(plan.Slots, plan.Members, slack)
	load := map[string]int{}
	for _, ns := range namespaces {
		load[assignment.Owner(Hash(ns.Name))] += max(ns.Weight, 1)
	}
	lo, hi := -1, 0
	for _, member := range plan.Members {
		if lo < 0 || load[member] < lo {
			lo = load[member]
		}
		hi = max(hi, load[member])
	}
	return float64(hi) > 1.2*float64(max(lo, 1))
}

// writePlan writes next over current (nil: none yet) on the plan's Lease.
func (m *Member) writePlan(ctx context.Context, current, next *Plan) error {
	data, err := json.Marshal(next)
	if err != nil {
		return err
	}
	leases := m.client.CoordinationV1().Leases(m.cfg.Namespace)
	name := planLeaseName(m.cfg.Group)
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && current == nil:
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.cfg.Namespace,
			Labels: map[string]string{GroupLabel: m.cfg.Group}, Annotations: map[string]string{planAnnotation: string(data)}}}, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	// Only over the plan this coordinator read: another may have written one since.
	if written, err := decodePlan(lease.Annotations[planAnnotation]); err != nil || (current == nil) != (written == nil) ||
		(written != nil && written.Generation != current.Generation) {
		return fmt.Errorf("the plan changed since it was read (%v)", err)
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[planAnnotation] = string(data)
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// readPlan reads the group's plan; nil when there is none yet.
func readPlan(lister coordinationlisters.LeaseNamespaceLister, group string) (*Plan, error) {
	lease, err := lister.Get(planLeaseName(group))
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodePlan(lease.Annotations[planAnnotation])
}

func decodePlan(data string) (*Plan, error) {
	if data == "" {
		return nil, nil
	}
	var p Plan
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return nil, fmt.Errorf("reading the shard plan: %w", err)
	}
	return &p, nil
}

// formatRanges writes rs as "first-last" pairs in hex, comma separated.
func formatRanges(rs Ranges) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, strconv.FormatUint(r.First, 16)+"-"+strconv.FormatUint(r.Last, 16))
	}
	return strings.Join(parts, ",")
}

// parseRanges reads what formatRanges wrote.
func parseRanges(s string) (Ranges, error) {
	if s == "" {
		return nil, nil
	}
	var rs []Range
	for part := range strings.SplitSeq(s, ",") {
		first, last, ok := strings.Cut(part, "-")
		f, err1 := strconv.ParseUint(first, 16, 64)
		l, err2 := strconv.ParseUint(last, 16, 64)
		if !ok || err1 != nil || err2 != nil || f > l {
			return nil, fmt.Errorf("shard ranges %q: %q is not first-last in hex", s, part)
		}
		rs = append(rs, Range{f, l})
	}
	return Merge(rs), nil
}

// intersect returns the hashes in both a and b.
func intersect(a, b Ranges) Ranges {
	var out []Range
	for _, x := range a {
		for _, y := range b {
			if first, last := max(x.First, y.First), min(x.Last, y.Last); first <= last {
				out = append(out, Range{first, last})
			}
		}
	}
	return Merge(out)
}

// overlaps says whether a and b share a hash.
func overlaps(a, b Ranges) bool { return len(intersect(a, b)) > 0 }
