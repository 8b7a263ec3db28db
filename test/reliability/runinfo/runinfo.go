// Package runinfo says on what a reliability run ran: the code's commit and the machine's load,
// which every figure of a shared machine must come with.
package runinfo

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// LoadAverage is the machine's load average over the last minute; 0 when unreadable.
func LoadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(fields[0], 64)
	return v
}

// Commit is the commit of the working directory's repository, with "+changes" when tracked
// files differ from it.
func Commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "an unknown commit"
	}
	c := strings.TrimSpace(string(out))
	if diff, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(diff) > 0 {
		c += "+changes"
	}
	return c
}
