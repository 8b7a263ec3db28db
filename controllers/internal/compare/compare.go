// Package compare holds the go-cmp options that Switchboard's API objects need, for the diffs
// the writers log and for the tests' assertions alike, so that there is one definition of each.
package compare

import (
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Quantities compares resource.Quantity by value ("1" equals "1000m"); go-cmp cannot see its
// unexported fields.
var Quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
