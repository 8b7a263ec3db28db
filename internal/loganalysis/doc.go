// Package loganalysis is `manager logs`: it reads the manager's JSON logs (zap through
// controller-runtime, one object per line) and summarises them per controller, or traces one
// object or one reconcile through them.
//
// It streams: each line is scanned for the few keys it needs by a hand-written scanner (no
// map per line, no allocation on the common path), and everything kept is bounded whatever
// the size of the input:
//   - lines longer than 1 MiB are skipped and counted (two 1 MiB read buffers);
//   - at most 256 controllers are told apart, further ones are counted as "(other)";
//   - reconcile durations go into a log-scale histogram per controller whose size does not
//     grow with the number of reconciles (quantiles within 1%);
//   - error groups and objects are counted with the Space-Saving algorithm in 1000 counters
//     each, so any group holding more than 1/1000 of the error lines is found, and counts are
//     marked as estimates once a counter has been taken over.
//
// Lines that are not JSON objects, or lack level, ts or msg, are counted and reported, never
// fatal. The manager's logger samples (package internal/logging), except lines that record a
// write, and logs how many lines of each controller it dropped; the summary adds those up
// (DROPPED), so a reader knows how much the other counts miss.
package loganalysis
