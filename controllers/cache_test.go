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
	"github.com/example/switchboard/controllers/internal/testenv"
)

// TestCacheKeepsManagedFieldsOnlyWhereRead checks the per-kind transform: the kinds whose
// managed fields a controller reads back before applying (Deployments, Services) keep them in
// the cache; the others (MyApps, VerticalScalers, ConfigMap metadata) are stored without, and
// ConfigMap metadata is stored without labels and annotations either.
func TestCacheKeepsManagedFieldsOnlyWhereRead(t *testing.T) {
	m := env.StartManager(t, "--controllers=*")
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cache-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "cached"},
		Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 80}}
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "cached"},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "cached"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "cached",
		Labels:      map[string]string{"team": "blue"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"k":"v"}}`}},
		Data: map[string]string{"k": "v"}}
	for _, obj := range []client.Object{app, vs, cm} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cmMeta := &metav1.PartialObjectMetadata{}
	cmMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	key := client.ObjectKey{Namespace: ns.Name, Name: "cached"}
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := m.GetCache().Get(ctx, key, cmMeta); err != nil {
			return err
		}
		if len(cmMeta.Labels)+len(cmMeta.Annotations) > 0 || cmMeta.ResourceVersion == "" {
			return fmt.Errorf("cached ConfigMap metadata keeps labels %v annotations %v resourceVersion %q; want only its identity",
				cmMeta.Labels, cmMeta.Annotations, cmMeta.ResourceVersion)
		}
		return nil
	})
	for _, tc := range []struct {
		obj  client.Object
		keep bool
	}{
		{&appsv1.Deployment{}, true},
		{&corev1.Service{}, true},
		{&v1alpha1.MyApp{}, false},
		{&v1alpha1.VerticalScaler{}, false},
		{cmMeta, false},
	} {
		testenv.Eventually(t, 30*time.Second, func() error {
			if err := m.GetCache().Get(ctx, key, tc.obj); err != nil {
				return err
			}
			if has := len(tc.obj.GetManagedFields()) > 0; has != tc.keep {
				return fmt.Errorf("%T in the cache has managedFields %v, want %v", tc.obj, has, tc.keep)
			}
			return nil
		})
	}
}
