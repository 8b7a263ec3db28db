// Command loggen writes a synthetic manager log of a given size to stdout, for measuring
// `manager logs` on big inputs:
//
//	go run ./internal/loganalysis/loggen/cmd/loggen -size 1GiB -seed 1 > /tmp/manager.log
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/example/switchboard/internal/loganalysis/loggen"
)

func main() {
	size := flag.String("size", "100MiB", "Bytes to write, with an optional KiB, MiB or GiB suffix.")
	seed := flag.Uint64("seed", 1, "Seed: the same seed and size give the same log.")
	flag.Parse()
	n, err := parseSize(*size)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loggen: -size %q: %v\n", *size, err)
		os.Exit(2)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	truth, err := loggen.Write(w, n, *seed)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loggen: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "loggen: %d bytes, %d lines\n", truth.Bytes, truth.Lines)
}

// parseSize reads a byte count such as 1GiB.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if rest, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = rest, m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a non-negative byte count such as 1GiB")
	}
	return n * mult, nil
}
