package configmapwatcher

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cm(name string, data map[string]string, binary map[string][]byte) corev1.ConfigMap {
	return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data, BinaryData: binary}
}

func TestLegacyConfigHash(t *testing.T) {
	base := []corev1.ConfigMap{cm("a", map[string]string{"x": "1", "y": "2"}, nil), cm("b", nil, map[string][]byte{"z": {0}})}
	labelled := []corev1.ConfigMap{cm("b", nil, map[string][]byte{"z": {0}}), cm("a", map[string]string{"y": "2", "x": "1"}, nil)}
	labelled[1].Labels = map[string]string{"team": "blue"}
	labelled[1].Annotations = map[string]string{"note": "x"}
	labelled[1].ResourceVersion = "42"
	for _, tc := range []struct {
		name  string
		other []corev1.ConfigMap
		same  bool
	}{
		{"same data in another order, with other metadata", labelled, true},
		{"a value changed", []corev1.ConfigMap{cm("a", map[string]string{"x": "1", "y": "3"}, nil), base[1]}, false},
		{"a key renamed", []corev1.ConfigMap{cm("a", map[string]string{"x": "1", "w": "2"}, nil), base[1]}, false},
		{"a key added", []corev1.ConfigMap{cm("a", map[string]string{"x": "1", "y": "2", "w": ""}, nil), base[1]}, false},
		{"binary data changed", []corev1.ConfigMap{base[0], cm("b", nil, map[string][]byte{"z": {1}})}, false},
		{"the same key moved from binaryData to data", []corev1.ConfigMap{base[0], cm("b", map[string]string{"z": "\x00"}, nil)}, false},
		{"a ConfigMap renamed", []corev1.ConfigMap{base[0], cm("c", nil, map[string][]byte{"z": {0}})}, false},
		{"a ConfigMap dropped", base[:1], false},
		// Without length prefixes these two would write the same bytes.
		{"a boundary moved between key and value", []corev1.ConfigMap{cm("a", map[string]string{"x1": "", "y": "2"}, nil), base[1]}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := legacyConfigHash(base) == legacyConfigHash(tc.other); got != tc.same {
				t.Errorf("same hash = %v, want %v", got, tc.same)
			}
		})
	}
}
