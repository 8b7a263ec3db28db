package controllers

import (
	"flag"
	"fmt"
	"strings"

	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Stakater Reloader's flags that set what the manager's own flags set: its log level and
// format (--log-level, --log-format) and its leader election (--enable-ha). They are the
// manager's, not the configmapwatcher's, so they are bound here, each to the same setting as
// the manager's flag of that meaning: whichever of the two is given last wins, as with a flag
// given twice.

// addReloaderFlags binds Reloader's names of the manager's settings to fs.
func (o *Options) addReloaderFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.LeaderElect, "enable-ha", o.LeaderElect, "Stakater Reloader's name of --leader-elect: several replicas, of which the one holding the Lease runs the controllers.")
	fs.Var(&reloaderLogLevel{o: &o.Zap}, "log-level", "Stakater Reloader's log level: trace, debug, info, warning (or warn), error, fatal or panic, as --zap-log-level (trace is --zap-log-level=2).")
	fs.Var(&reloaderLogFormat{o: &o.Zap}, "log-format", "Stakater Reloader's log format: 'json' (the default here) or '' (text), as --zap-encoder=json or console.")
}

// reloaderLogLevels are Reloader's levels (logrus's) as zap levels: trace is one more
// verbosity than debug, and logrus's warning keeps what zap's does.
var reloaderLogLevels = map[string]zapcore.Level{
	"trace": zapcore.Level(-2), "debug": zapcore.DebugLevel, "info": zapcore.InfoLevel, "warning": zapcore.WarnLevel,
	"warn": zapcore.WarnLevel, "error": zapcore.ErrorLevel, "fatal": zapcore.FatalLevel, "panic": zapcore.PanicLevel,
}

// reloaderLogLevel is --log-level.
type reloaderLogLevel struct {
	o     *zap.Options
	value string
}

func (l *reloaderLogLevel) String() string { return l.value }

func (l *reloaderLogLevel) Set(s string) error {
	level, ok := reloaderLogLevels[strings.ToLower(s)]
	if !ok {
		return fmt.Errorf("%q is not one of Reloader's levels: trace, debug, info, warning, error, fatal, panic", s)
	}
	l.o.Level = uberzap.NewAtomicLevelAt(level)
	l.value = s
	return nil
}

// reloaderLogFormat is --log-format.
type reloaderLogFormat struct {
	o     *zap.Options
	value string
}

func (f *reloaderLogFormat) String() string { return f.value }

func (f *reloaderLogFormat) Set(s string) error {
	switch s {
	case "json":
		f.o.NewEncoder = func(opts ...zap.EncoderConfigOption) zapcore.Encoder {
			return zapcore.NewJSONEncoder(encoderConfig(uberzap.NewProductionEncoderConfig(), opts))
		}
	case "":
		f.o.NewEncoder = func(opts ...zap.EncoderConfigOption) zapcore.Encoder {
			return zapcore.NewConsoleEncoder(encoderConfig(uberzap.NewDevelopmentEncoderConfig(), opts))
		}
	default:
		// Reloader warns and logs text; a value it does not know is a mistake worth stopping for.
		return fmt.Errorf("%q is not one of Reloader's formats: 'json', or '' for text", s)
	}
	f.value = s
	return nil
}

// encoderConfig applies opts to cfg, as controller-runtime's encoders do.
func encoderConfig(cfg zapcore.EncoderConfig, opts []zap.EncoderConfigOption) zapcore.EncoderConfig {
	for _, opt := range opts {
		opt(&cfg)
	}
	return cfg
}
