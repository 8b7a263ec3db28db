package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// TestCacheKeepsManagedFieldsOnlyWhereRead checks the per-kind transform: the kinds whose
// managed fields a selected controller reads back before applying keep them in the cache (with
// every controller: Deployments, which the verticalscaler reads); the others are stored without
// (MyApps, VerticalScalers, and Deployments when the configmapwatcher runs alone). Deployments
// are trimmed to what the configmapwatcher reads when it is the only controller watching them.
func TestCacheKeepsManagedFieldsOnlyWhereRead(t *testing.T) {
	for _, tc := range []struct {
		controllers string
		// withMyApp creates a MyApp, whose Deployment and Service the myapp controller
		// creates; otherwise the test creates a Deployment itself.
		withMyApp bool
		keep      map[string]bool // kind -> managed fields kept
		trimmed   bool            // Deployments trimmed
	}{
		{"*", true, map[string]bool{"Deployment": true, "MyApp": false, "VerticalScaler": false}, false},
		{"configmapwatcher", false, map[string]bool{"Deployment": false}, true},
		{"configmapwatcher-deployments", false, map[string]bool{"Deployment": false}, true},
	} {
		t.Run(tc.controllers, func(t *testing.T) {
			m := env.StartManager(t, "--controllers="+tc.controllers)
			ns := createCachedObjects(t, tc.withMyApp)
			ctx := context.Background()
			key := client.ObjectKey{Namespace: ns, Name: "cached"}
			objects := map[string]client.Object{"Deployment": &appsv1.Deployment{},
				"MyApp": &v1alpha1.MyApp{}, "VerticalScaler": &v1alpha1.VerticalScaler{}}
			for kind, keep := range tc.keep {
				obj := objects[kind]
				testenv.Eventually(t, 30*time.Second, func() error {
					if err := m.GetCache().Get(ctx, key, obj); err != nil {
						return err
					}
					if has := len(obj.GetManagedFields()) > 0; has != keep {
						return fmt.Errorf("%s in the cache has managedFields %v, want %v", kind, has, keep)
					}
					if d, ok := obj.(*appsv1.Deployment); ok && (d.Spec.Selector == nil) != tc.trimmed {
						return fmt.Errorf("Deployment in the cache has selector %v, want trimmed %v", d.Spec.Selector, tc.trimmed)
					}
					return nil
				})
			}
		})
	}
}

// createCachedObjects creates, in a new namespace, a VerticalScaler and either a MyApp or a
// Deployment; all named "cached". It returns the namespace.
func createCachedObjects(t *testing.T, withMyApp bool) string {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t, "cache-")
	app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cached"},
		Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 80}}
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cached"},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "cached"}}
	labels := map[string]string{"app": "cached"}
	var deployment client.Object = &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cached"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
	if withMyApp {
		deployment = app
	}
	for _, obj := range []client.Object{deployment, vs} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}
