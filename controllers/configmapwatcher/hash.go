package configmapwatcher

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// legacyConfigHash is the config hash of the releases before the record
// (v1alpha1.ConfigStateAnnotation): a SHA-256 of the data and binaryData of the ConfigMaps a
// Deployment reloaded on (podrefs.LegacyReloadConfigMaps), in name order and key order, lengths
// written before every string. The upgrade from those releases computes it again to tell
// whether the data changed during the upgrade.
func legacyConfigHash(configMaps []corev1.ConfigMap) string {
	sorted := append([]corev1.ConfigMap(nil), configMaps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	h := sha256.New()
	write := func(b []byte) {
		var n [8]byte
		for i, l := 0, uint64(len(b)); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	for i := range sorted {
		cm := &sorted[i]
		write([]byte(cm.Name))
		write([]byte("data"))
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			write([]byte(k))
			write([]byte(cm.Data[k]))
		}
		write([]byte("binaryData"))
		for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
			write([]byte(k))
			write(cm.BinaryData[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
