package testenv

import (
	"testing"

	k8slabels "k8s.io/apimachinery/pkg/labels"
)

// OneShardEach fails t unless each of objects (an object's labels) matches exactly one of
// selectors: the --watch-label-selector values of a sharded installation's managers must give
// every object one manager, whatever its labels. The manifests' tests check their shards with it.
func OneShardEach(t testing.TB, selectors []k8slabels.Selector, objects ...k8slabels.Set) {
	t.Helper()
	for _, object := range objects {
		matched := 0
		for _, selector := range selectors {
			if selector.Matches(object) {
				matched++
			}
		}
		if matched != 1 {
			t.Errorf("an object labelled %v falls in %d shards, want exactly one", object, matched)
		}
	}
}
