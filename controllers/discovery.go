package controllers

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/example/switchboard/controllers/internal/transient"
)

// MapperProvider is the manager's MapperProvider: controller-runtime's own REST mapper, with
// the API server's discovery read into it before the manager is made, and that read retried
// when it fails in a way that may pass (transient.Retry) until ctx ends.
//
// NewManager asks the mapper whether each kind the cache is configured for is namespaced, and
// the informers and indexes ask it again at Wire. The mapper reads every group and kind in one
// aggregated discovery request the first time it is asked (Kubernetes 1.30 and later) and
// answers from memory after, so a 503 on that request, unretried, stopped the manager before it
// served a probe.
func MapperProvider(ctx context.Context, log logr.Logger) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	return func(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
		mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
		if err != nil {
			return nil, fmt.Errorf("creating the REST mapper: %w", err)
		}
		configMaps := corev1.SchemeGroupVersion.WithKind("ConfigMap")
		err = transient.Retry(ctx, transient.StartBackoff, log, "reading the API server's discovery", func(context.Context) error {
			_, err := mapper.RESTMapping(configMaps.GroupKind(), configMaps.Version)
			return err
		})
		return mapper, err
	}
}
