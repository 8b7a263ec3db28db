// Package runinfo is what every reliability run shares: on what it ran (the code's commit and the
// machine's load, which every figure of a shared machine must come with), and where the
// libraries it uses log.
package runinfo

import (
	"os"
	"os/exec"
	"strconv"
	"strings"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// LogErrors gives controller-runtime's logger, which the local cluster's clients and caches log
// through, a sink: errors to stderr.
func LogErrors() {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
}

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
