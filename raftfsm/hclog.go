package raftfsm

import (
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// zlog adapts hashicorp/raft's hclog.Logger onto zerolog so Raft's lines go
// through the node's one logger. Raft logs every heartbeat failure and every
// pipeline hiccup at warn/error; at info it is readable, so the adapter keeps
// hclog's levels and lets zerolog's own level filter.
type zlog struct {
	l     zerolog.Logger
	name  string
	args  []any
	level hclog.Level
}

func newHCLog(l zerolog.Logger, level hclog.Level) hclog.Logger {
	return &zlog{l: l, name: "raft", level: level}
}

func (z *zlog) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level < z.level {
		return
	}
	var ev *zerolog.Event
	switch level {
	case hclog.Trace:
		ev = z.l.Trace()
	case hclog.Debug:
		ev = z.l.Debug()
	case hclog.Warn:
		ev = z.l.Warn()
	case hclog.Error:
		ev = z.l.Error()
	default:
		ev = z.l.Info()
	}
	if ev == nil {
		return
	}
	ev = ev.Str("component", z.name)
	all := append(append([]any(nil), z.args...), args...)
	for i := 0; i < len(all); i += 2 {
		key := fmt.Sprint(all[i])
		if i+1 >= len(all) {
			ev = ev.Str("extra", key)
			break
		}
		switch v := all[i+1].(type) {
		case error:
			ev = ev.AnErr(key, v)
		case string:
			ev = ev.Str(key, v)
		case fmt.Stringer:
			ev = ev.Str(key, v.String())
		default:
			ev = ev.Interface(key, v)
		}
	}
	ev.Msg(msg)
}

func (z *zlog) Trace(msg string, args ...any) { z.Log(hclog.Trace, msg, args...) }
func (z *zlog) Debug(msg string, args ...any) { z.Log(hclog.Debug, msg, args...) }
func (z *zlog) Info(msg string, args ...any)  { z.Log(hclog.Info, msg, args...) }
func (z *zlog) Warn(msg string, args ...any)  { z.Log(hclog.Warn, msg, args...) }
func (z *zlog) Error(msg string, args ...any) { z.Log(hclog.Error, msg, args...) }
func (z *zlog) IsTrace() bool                 { return z.level <= hclog.Trace }
func (z *zlog) IsDebug() bool                 { return z.level <= hclog.Debug }
func (z *zlog) IsInfo() bool                  { return z.level <= hclog.Info }
func (z *zlog) IsWarn() bool                  { return z.level <= hclog.Warn }
func (z *zlog) IsError() bool                 { return z.level <= hclog.Error }
func (z *zlog) ImpliedArgs() []any            { return z.args }

func (z *zlog) With(args ...any) hclog.Logger {
	c := *z
	c.args = append(append([]any(nil), z.args...), args...)
	return &c
}

func (z *zlog) Name() string { return z.name }

func (z *zlog) Named(name string) hclog.Logger {
	c := *z
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (z *zlog) ResetNamed(name string) hclog.Logger {
	c := *z
	c.name = name
	return &c
}

func (z *zlog) SetLevel(level hclog.Level) { z.level = level }
func (z *zlog) GetLevel() hclog.Level      { return z.level }

func (z *zlog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(z.StandardWriter(opts), "", 0)
}

func (z *zlog) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return lineWriter{z}
}

// lineWriter turns a standard-library log line into an info event.
type lineWriter struct{ z *zlog }

func (w lineWriter) Write(p []byte) (int, error) {
	w.z.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
