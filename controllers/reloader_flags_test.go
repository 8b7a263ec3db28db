package controllers

import (
	"flag"
	"io"
	"testing"

	"go.uber.org/zap/zapcore"

	"github.com/example/switchboard/controllers/configmapwatcher"
)

// TestReloaderFlagsOfTheManager: Reloader's --enable-ha, --log-level and --log-format set the
// manager's leader election, level and encoder; a level or format Reloader does not know stops
// the manager; and every Reloader flag the configmapwatcher leaves to the manager is one.
func TestReloaderFlagsOfTheManager(t *testing.T) {
	o := parsedOptions(t, []string{"--enable-ha", "--log-level=trace", "--log-format=json"})
	if !o.LeaderElect || !o.Zap.Level.Enabled(zapcore.Level(-2)) || o.Zap.Level.Enabled(zapcore.Level(-3)) || o.Zap.NewEncoder == nil {
		t.Errorf("--enable-ha --log-level=trace --log-format=json: leader election %v, V(2) %v, V(3) %v, encoder set %v",
			o.LeaderElect, o.Zap.Level.Enabled(zapcore.Level(-2)), o.Zap.Level.Enabled(zapcore.Level(-3)), o.Zap.NewEncoder != nil)
	}
	if line := encoded(t, o); line[0] != '{' {
		t.Errorf("--log-format=json writes %q", line)
	}
	o = parsedOptions(t, []string{"--log-level=Warning", "--log-format="})
	if o.Zap.Level.Enabled(zapcore.InfoLevel) || !o.Zap.Level.Enabled(zapcore.ErrorLevel) {
		t.Error("--log-level=Warning: info lines on, or errors off")
	}
	if line := encoded(t, o); line[0] == '{' {
		t.Errorf("--log-format= (text) writes %q", line)
	}
	for _, args := range [][]string{{"--log-level=verbose"}, {"--log-format=text"}} {
		o := NewOptions()
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.BindFlags(fs, Table())
		if err := fs.Parse(args); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	NewOptions().BindFlags(fs, Table())
	for _, f := range configmapwatcher.ReloaderFlags {
		if fs.Lookup(f.Name) == nil {
			t.Errorf("Reloader's flag --%s is not a flag of the manager: its arguments would stop it", f.Name)
		}
	}
}

// encoded is a line as the encoder o's flags chose writes it.
func encoded(t *testing.T, o *Options) string {
	t.Helper()
	buf, err := o.Zap.NewEncoder().EncodeEntry(zapcore.Entry{Message: "hello"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
