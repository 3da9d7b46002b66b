// Package logredact puts errors.Redact between safeput's log lines and the caller's zap core:
// the message and every field that carries text (strings, errors, Stringers) are redacted before
// the core encodes them. An adapter's error is logged as the store sent it, and a store may echo
// the request's Authorization header, session token or SSE-C key in its message; redacting where
// the line is written covers every call site, present and future.
package logredact

import (
	"fmt"
	"os"
	"reflect"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	sperrors "github.com/safeput/safeput/errors"
)

// nop is the logger of a caller who gave none: one for all, as a logger is immutable.
var nop = zap.NewNop()

// Logger returns l logging through a redacting core; a nil l is a no-op logger. A logger that
// already redacts, or that writes nothing at any level, is returned as it is.
func Logger(l *zap.Logger) *zap.Logger {
	if l == nil {
		return nop
	}
	c := l.Core()
	if _, ok := c.(core); ok || !c.Enabled(zapcore.FatalLevel) {
		return l
	}
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return core{c} }))
}

// core redacts, then hands the entry to the caller's core. It asks that core's Check, not only
// its Enabled, so what the core decides per entry still holds (a sampler's sampling, a tee's
// per-core levels).
type core struct{ zapcore.Core }

func (c core) With(fields []zapcore.Field) zapcore.Core {
	return core{c.Core.With(redactFields(fields))}
}

func (c core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.Enabled(e.Level) {
		return ce
	}
	e.Message = sperrors.Redact(e.Message)
	accepted := c.Core.Check(e, nil)
	if accepted == nil {
		return ce
	}
	// The logger sets its error output on the entry it built, not on this one: zap's default.
	accepted.ErrorOutput = stderr
	return ce.AddCore(e, pending{accepted})
}

var stderr = zapcore.Lock(os.Stderr)

func (c core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.Message = sperrors.Redact(e.Message)
	return c.Core.Write(e, redactFields(fields))
}

// pending is an entry the caller's core accepted, written once the logger has its fields.
type pending struct{ accepted *zapcore.CheckedEntry }

func (p pending) Enabled(zapcore.Level) bool                                            { return true }
func (p pending) With([]zapcore.Field) zapcore.Core                                     { return p }
func (p pending) Check(_ zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry { return ce }
func (p pending) Sync() error                                                           { return nil }

// Write writes the entry as the logger completed it after Check (caller, stack).
func (p pending) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.Message = sperrors.Redact(e.Message)
	p.accepted.Entry = e
	p.accepted.Write(redactFields(fields)...)
	return nil
}

// redactFields returns fields with their text redacted: strings and byte strings as they are,
// errors and Stringers rendered (as the encoder would) and then redacted. Other types carry no
// free text safeput puts there.
func redactFields(fields []zapcore.Field) []zapcore.Field {
	out := fields
	copied := false
	set := func(i int, f zapcore.Field) {
		if !copied {
			out = append([]zapcore.Field(nil), fields...)
			copied = true
		}
		out[i] = f
	}
	for i, f := range fields {
		switch f.Type {
		case zapcore.StringType:
			if r := sperrors.Redact(f.String); r != f.String {
				f.String = r
				set(i, f)
			}
		case zapcore.ByteStringType:
			if b, ok := f.Interface.([]byte); ok {
				set(i, zap.String(f.Key, sperrors.Redact(string(b))))
			}
		case zapcore.ErrorType:
			if err, ok := f.Interface.(error); ok {
				set(i, zap.String(f.Key, sperrors.Redact(text(err, err.Error))))
			}
		case zapcore.StringerType:
			if s, ok := f.Interface.(fmt.Stringer); ok {
				set(i, zap.String(f.Key, sperrors.Redact(text(s, s.String))))
			}
		}
	}
	return out
}

// text calls render as zap's encoder would: a nil pointer prints "<nil>", a panic is reported,
// not propagated.
func text(v any, render func() string) (s string) {
	defer func() {
		if r := recover(); r != nil {
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
				s = "<nil>"
				return
			}
			s = fmt.Sprintf("PANIC=%v", r)
		}
	}()
	return render()
}
