package logs

import (
	"bytes"
	"io"
	"testing"

	"github.com/example/switchboard/internal/logs/loggen"
)

// BenchmarkSummary measures summary's throughput on a generated debug-level log of 64 MiB
// (MB/s is of log read).
func BenchmarkSummary(b *testing.B) {
	var log bytes.Buffer
	if _, err := loggen.Write(&log, 64<<20, 1); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(log.Len()))
	b.ReportAllocs()
	for b.Loop() {
		s := newSummary(filter{minLevel: -128})
		if !newReader().eachFile(nil, bytes.NewReader(log.Bytes()), io.Discard, s.add) {
			b.Fatal("reading failed")
		}
		if err := s.report(DefaultTop).writeTable(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
