package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
)

// TestWeighingStreamsTheObjects: a shard group weighs its namespaces through a streamed list
// (the API server's WatchList: one object in memory at a time), never a list; where the API
// server refuses the stream (at once or in an error event), or ends it before the bookmark after
// the objects, through pages of a list. Each way counts the same, in a namespace and with a label selector.
func TestWeighingStreamsTheObjects(t *testing.T) {
	t.Parallel()
	shop, blog := env.Namespace(t, "weigh-shop-"), env.Namespace(t, "weigh-blog-")
	for i := range 7 {
		ns, team := shop, "red"
		if i >= 4 {
			ns = blog
		}
		if i%2 == 0 {
			team = "blue"
		}
		app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%d", i), Labels: map[string]string{"team": team}},
			Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
		if err := env.Client.Create(t.Context(), app); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ways := map[string]client.WithWatch{
		"streamed": interceptor.NewClient(c, interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("listed where the API server streams")
		}}),
		"refused stream, paged": interceptor.NewClient(c, interceptor.Funcs{Watch: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
			return nil, apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
		}}),
		"unfinished stream, paged": interceptor.NewClient(c, interceptor.Funcs{Watch: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
			return watch.NewEmptyWatch(), nil
		}}),
		"stream refused by an error event, paged": interceptor.NewClient(c, interceptor.Funcs{Watch: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
			events := make(chan watch.Event, 1)
			status := apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled").Status()
			events <- watch.Event{Type: watch.Error, Object: &status}
			return watch.NewProxyWatcher(events), nil
		}}),
	}
	blue := labels.SelectorFromSet(labels.Set{"team": "blue"})
	for name, weigher := range ways {
		t.Run(name, func(t *testing.T) {
			for _, scope := range []struct {
				opts *client.ListOptions
				want map[string]int
			}{
				{&client.ListOptions{Namespace: shop}, map[string]int{shop: 4}},
				{&client.ListOptions{Namespace: blog}, map[string]int{blog: 3}},
				{&client.ListOptions{Namespace: shop, LabelSelector: blue}, map[string]int{shop: 2}},
			} {
				counts := map[string]int{}
				if err := controllers.CountByNamespace(t.Context(), weigher, v1alpha1.GroupVersion.WithKind("MyApp"), scope.opts, counts); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(scope.want, counts); diff != "" {
					t.Errorf("counts in %s (-want +got):\n%s", scope.opts.Namespace, diff)
				}
			}
		})
	}
}
