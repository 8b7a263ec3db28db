package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestIdleRecheckStopsTheManagerOnAChange: a controller whose Idle check, or whose optional
// kind's being served, changes after the start stops the manager with an error that names it
// and says which way it changed; an unchanged answer, or one that cannot be had, does not.
func TestIdleRecheckStopsTheManagerOnAChange(t *testing.T) {
	// The VPA's components, as the verticalpodautoscaler's Idle check would find them.
	var componentsRunning atomic.Bool
	var checkFails atomic.Bool
	// Whether the API server serves Argo Rollouts.
	var rolloutsServed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/argoproj.io/v1alpha1" || !rolloutsServed.Load() {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "argoproj.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "rollouts", Namespaced: true, Kind: "Rollout"}}})
	}))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name string
		// controllers are what runs; change changes the cluster after the start.
		controllers string
		change      func()
		wantErr     string // empty: the manager keeps running
	}{
		{"nothing changes", "verticalscaler,configmapwatcher-rollouts", func() {}, ""},
		{"the VPA's look cannot answer", "verticalscaler", func() { checkFails.Store(true) }, ""},
		{"the VPA's components start", "verticalscaler", func() { componentsRunning.Store(true) },
			"controller verticalpodautoscaler ran since the manager started, and now must be idle (the VPA runs)"},
		{"Argo Rollouts' CRD is installed", "configmapwatcher-rollouts", func() { rolloutsServed.Store(true) },
			"controller configmapwatcher-rollouts was idle at start (the API server does not serve argoproj.io/v1alpha1 Rollout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			componentsRunning.Store(false)
			checkFails.Store(false)
			rolloutsServed.Store(false)
			o := NewOptions()
			o.Controllers = tc.controllers
			o.IdleRecheckInterval = 10 * time.Millisecond
			sel, err := o.Resolve(Table())
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range sel.Controllers {
				if c.Idle != nil && c.Name == "verticalpodautoscaler" {
					sel.Controllers[i].Idle = func(context.Context, []string) (string, error) {
						switch {
						case checkFails.Load():
							return "", errors.New("forbidden")
						case componentsRunning.Load():
							return "the VPA runs", nil
						}
						return "", nil
					}
					sel.Controllers[i].Optional = false
				}
			}
			sel, err = o.Prepare(context.Background(), &rest.Config{Host: srv.URL}, sel, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			var recheck *idleRecheck
			for _, r := range sel.Runnables {
				if rr, ok := r.(*idleRecheck); ok {
					recheck = rr
				}
			}
			if recheck == nil {
				t.Fatal("Prepare made no idleRecheck")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			tc.change()
			err = recheck.Start(ctx)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Start = %v, want it to run until the context ends", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Start = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
