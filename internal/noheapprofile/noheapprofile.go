// Package noheapprofile switches the Go runtime's heap profiling off before the packages the
// manager links are initialised, as the linker does for a program that does not link
// runtime/pprof. The manager serves no profile, yet controller-runtime links net/http/pprof, so
// the runtime samples an allocation in about every 512 KiB from the start of the process, and
// the packages' initialisers allocate 3.2 MiB (client-go's scheme, the API types, regular
// expressions). Each sample walks its stack, which makes the binary's function tables resident
// where the frames fall, by chance. Switched off here rather than in main, the manager started
// 0.4 MiB smaller, and the same from run to run (docs/performance.md has the measurement).
//
// Import it for its effect, blank, from package main only. It must import nothing but the
// runtime, and its import path must sort before those of the packages it switches profiling
// off for: among the packages whose imports are initialised, Go initialises the one whose
// import path sorts first. main's tests check that no package that allocates comes before it.
package noheapprofile

import "runtime"

func init() {
	runtime.MemProfileRate = 0
}
