package config_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/internal/testenv"
)

// TestVPACRDsMatchTheVPAs holds the CRDs generated from apis/vpa (config/crd/vpa) to those the
// VPA's release ships (deploy/vpa-v1-crd-gen.yaml of testenv.VPAVersion, from the Go module
// cache): the same names, scope, columns, subresources and schema of v1, field for field, with
// every type, format, enum, bound and CEL rule. Only the words differ (descriptions and the CEL
// rules' messages are Switchboard's own), and the VPA's v1beta2, which it no longer serves and
// a cluster without the VPA's CRDs never stored, is left out.
func TestVPACRDsMatchTheVPAs(t *testing.T) {
	dir, err := testenv.ModuleDir(testenv.VPAModule, testenv.VPAVersion)
	if err != nil {
		t.Fatal(err)
	}
	theirs := readCRDs(t, filepath.Join(dir, "deploy", "vpa-v1-crd-gen.yaml"))
	paths, err := filepath.Glob(filepath.Join("crd", "vpa", "*_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]apiextensionsv1.CustomResourceDefinition{}
	for _, path := range paths {
		for name, crd := range readCRDs(t, path) {
			ours[name] = crd
		}
	}
	if len(theirs) != 2 || len(ours) != len(theirs) {
		t.Fatalf("VPA %s ships %d CRDs, config/crd/vpa holds %d: want the same two", testenv.VPAVersion, len(theirs), len(ours))
	}
	for name, want := range theirs {
		got, ok := ours[name]
		if !ok {
			t.Errorf("config/crd/vpa has no %s", name)
			continue
		}
		if a, b := want.Annotations["api-approved.kubernetes.io"], got.Annotations["api-approved.kubernetes.io"]; a != b {
			t.Errorf("%s: api-approved.kubernetes.io %q, want %q: the API server refuses a *.k8s.io group without it", name, b, a)
		}
		want.Spec.Versions = servedVersions(t, name, want.Spec.Versions)
		if diff := cmp.Diff(withoutWords(want.Spec), withoutWords(got.Spec), jsonAsText); diff != "" {
			t.Errorf("%s differs from VPA %s's (-VPA +ours):\n%s", name, testenv.VPAVersion, diff)
		}
	}
}

// jsonAsText shows the raw JSON of enums and defaults as text in a diff, not as bytes.
var jsonAsText = cmp.Transformer("text", func(j apiextensionsv1.JSON) string { return string(j.Raw) })

// servedVersions returns the versions the VPA's CRD serves, failing the test for one that is
// stored but not served: a CRD without it could not replace one that stores it.
func servedVersions(t *testing.T, crd string, versions []apiextensionsv1.CustomResourceDefinitionVersion) []apiextensionsv1.CustomResourceDefinitionVersion {
	t.Helper()
	var served []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range versions {
		switch {
		case v.Served:
			served = append(served, v)
		case v.Storage:
			t.Errorf("%s: the VPA stores %s without serving it", crd, v.Name)
		}
	}
	return served
}

// readCRDs reads every CustomResourceDefinition of a YAML file, by name.
func readCRDs(t *testing.T, path string) map[string]apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crds := map[string]apiextensionsv1.CustomResourceDefinition{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return crds
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(doc, &crd); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		crds[crd.Name] = crd
	}
}

// withoutWords returns spec without the descriptions of its schemas and the messages of their
// CEL rules.
func withoutWords(spec apiextensionsv1.CustomResourceDefinitionSpec) apiextensionsv1.CustomResourceDefinitionSpec {
	out := *spec.DeepCopy()
	for i := range out.Versions {
		if s := out.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			stripWords(s.OpenAPIV3Schema)
		}
	}
	return out
}

func stripWords(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	for i := range s.XValidations {
		s.XValidations[i].Message = ""
	}
	for k, p := range s.Properties {
		stripWords(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		stripWords(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		stripWords(s.AdditionalProperties.Schema)
	}
	for i := range s.AnyOf {
		stripWords(&s.AnyOf[i])
	}
}

// TestVPACRDsInstall installs config/crd/vpa on an API server (which refuses a CRD of a
// *.k8s.io group without its approval annotation, or one whose CEL rules do not compile), then
// creates a VerticalPodAutoscaler with every field set and a checkpoint, reads them back unpruned,
// and checks that the validation refuses what the VPA's CRD refuses.
func TestVPACRDsInstall(t *testing.T) {
	env := testenv.StartForTest(t)
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join("crd", "vpa")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	vpa := object(t, `
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  recommenders: [{name: switchboard}]
  startupBoost: {cpu: {type: Factor, factor: 2, durationSeconds: 30}}
  updatePolicy:
    updateMode: InPlaceOrRecreate
    minReplicas: 2
    evictAfterOOMSeconds: 60
    evictionRequirements: [{resources: [cpu], changeRequirement: TargetHigherThanRequests}]
  resourcePolicy:
    containerPolicies:
    - containerName: '*'
      mode: Auto
      minAllowed: {cpu: 10m, memory: 16Mi}
      maxAllowed: {cpu: "2", memory: 1Gi}
      controlledResources: [cpu, memory]
      controlledValues: RequestsOnly
      oomBumpUpRatio: "1.5"
      oomMinBumpUp: 100Mi
      memoryAggregationIntervalSeconds: 3600
      memoryAggregationIntervalCount: 8
      startupBoost: {cpu: {type: Quantity, quantity: 500m}}
    - {containerName: istio-proxy, mode: "Off"}
`)
	checkpoint := object(t, `
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscalerCheckpoint
metadata: {name: web-app, namespace: default}
spec: {vpaObjectName: web, containerName: app}
status:
  version: v3
  lastUpdateTime: "2026-12-07T04:00:00Z"
  firstSampleStart: "2026-12-06T04:00:00Z"
  lastSampleStart: "2026-12-07T03:59:00Z"
  totalSamplesCount: 1440
  cpuHistogram: {referenceTimestamp: "2026-12-07T00:00:00Z", totalWeight: 12.5, bucketWeights: {"3": 10000, "7": 420}}
  memoryHistogram: {referenceTimestamp: "2026-12-07T00:00:00Z", totalWeight: 0.75, bucketWeights: {"40": 10000}}
`)
	for _, obj := range []*unstructured.Unstructured{vpa, checkpoint} {
		want := obj.DeepCopy()
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetKind(), err)
		}
		for _, field := range []string{"spec", "status"} {
			if diff := cmp.Diff(want.Object[field], obj.Object[field]); diff != "" {
				t.Errorf("%s %s as served (-created +served):\n%s", obj.GetKind(), field, diff)
			}
		}
	}

	for _, tc := range []struct{ name, spec string }{
		{"an update mode the VPA does not know", `{targetRef: {kind: Deployment, name: web}, updatePolicy: {updateMode: Sometimes}}`},
		{"no targetRef", `{updatePolicy: {updateMode: "Off"}}`},
		{"a factor boost with a quantity", `{targetRef: {kind: Deployment, name: web}, startupBoost: {cpu: {type: Factor, quantity: 1}}}`},
		{"an aggregation interval of 0", `{targetRef: {kind: Deployment, name: web}, resourcePolicy: {containerPolicies: [{containerName: app, memoryAggregationIntervalSeconds: 0}]}}`},
		{"a container mode the VPA does not know", `{targetRef: {kind: Deployment, name: web}, resourcePolicy: {containerPolicies: [{containerName: app, mode: Sometimes}]}}`},
	} {
		bad := object(t, "{apiVersion: autoscaling.k8s.io/v1, kind: VerticalPodAutoscaler, metadata: {name: bad, namespace: default}, spec: "+tc.spec+"}")
		if err := env.Client.Create(ctx, bad); !apierrors.IsInvalid(err) {
			t.Errorf("%s: created with error %v, want it refused as invalid", tc.name, err)
		}
	}
}

func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	// Unstructured's own decoding keeps whole numbers int64, as the client's reads do.
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return obj
}
