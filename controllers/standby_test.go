package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestStandbyReadiness: a replica that does not lead is ready only while a live replica holds
// one of its Leases, or one of this installation's replicas of an earlier version holds a Lease
// of the fixed names; a free, expired or missing Lease means it is about to lead.
func TestStandbyReadiness(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	lease := func(name, holder string, renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: name},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(holder),
				LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime:            &metav1.MicroTime{Time: now.Add(-renewed)},
			},
		}
	}
	group := types.NamespacedName{Namespace: "system", Name: "group"}
	manager := types.NamespacedName{Namespace: "system", Name: "manager"}
	for _, tc := range []struct {
		name      string
		leases    []*coordinationv1.Lease
		wantReady bool
	}{
		{name: "no Lease yet", wantReady: false},
		{name: "held and renewed", leases: []*coordinationv1.Lease{lease("group", "other", 2*time.Second)}, wantReady: true},
		{name: "released on cancel", leases: []*coordinationv1.Lease{lease("group", "", 2*time.Second)}, wantReady: false},
		{name: "holder gone, expired", leases: []*coordinationv1.Lease{lease("group", "other", 20*time.Second)}, wantReady: false},
		{name: "deferring to the manager's Lease", leases: []*coordinationv1.Lease{lease("group", "", 0), lease("manager", "other", time.Second)}, wantReady: true},
		{name: "waiting for ours under the fixed names", leases: []*coordinationv1.Lease{lease("switchboard-group", "sb-controller-manager-5d4f8-x2v9q_0a1b", time.Second)}, wantReady: true},
		{name: "another installation under the fixed names", leases: []*coordinationv1.Lease{lease("switchboard-group", "other-controller-manager-5d4f8-x2v9q_0a1b", time.Second)}, wantReady: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := make([]runtime.Object, len(tc.leases))
			for i, l := range tc.leases {
				objs[i] = l
			}
			s := standbyReadiness{
				reader:     fake.NewClientBuilder().WithRuntimeObjects(objs...).Build(),
				now:        func() time.Time { return now },
				leases:     func(Controller) []types.NamespacedName { return []types.NamespacedName{group, manager} },
				fixedNames: []types.NamespacedName{{Namespace: "system", Name: "switchboard-group"}},
				ours:       func(holder string) bool { return strings.HasPrefix(holder, "sb-controller-manager-") },
			}
			err := s.check(context.Background(), Controller{Name: "c"})
			if ready := err == nil; ready != tc.wantReady {
				t.Errorf("ready = %t (%v), want %t", ready, err, tc.wantReady)
			}
		})
	}
}

// TestStandbySettles: once a replica has seen the Lease held, or has led the controller, it stays
// a ready standby while the Lease is free (a failover waiting out the lease duration).
func TestStandbySettles(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "system", Name: "manager"}
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: now}},
	}
	reader := fake.NewClientBuilder().WithRuntimeObjects(held).Build()
	s := standbyReadiness{reader: reader, now: func() time.Time { return now },
		leases: func(Controller) []types.NamespacedName { return []types.NamespacedName{key} }}
	if err := s.check(context.Background(), Controller{Name: "c"}); err != nil {
		t.Fatalf("held by another: %v", err)
	}
	now = now.Add(time.Minute) // the holder is gone; the Lease has expired
	if err := s.check(context.Background(), Controller{Name: "c"}); err != nil {
		t.Errorf("after seeing it held: %v, want ready", err)
	}
	if err := s.check(context.Background(), Controller{Name: "other"}); err == nil {
		t.Error("a controller whose Lease was never seen held: ready, want about to lead")
	}
	s.led = func(c Controller) bool { return c.Name == "other" }
	if err := s.check(context.Background(), Controller{Name: "other"}); err != nil {
		t.Errorf("after leading it: %v, want ready", err)
	}
}
