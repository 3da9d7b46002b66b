package logredact

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/safeput/safeput/internal/secrets"
)

const (
	token  = "FwoGZXIvYXdzEBYaDHtokenValueOfTheSession"
	echoed = "X-Amz-Security-Token: " + token
)

type stringer struct{}

func (stringer) String() string { return "asked " + echoed }

type nilErr struct{}

func (*nilErr) Error() string { panic("nil receiver") }

// TestFieldsRedacted: the message and every text field, given to the line or to With, reach
// the core redacted, however they were passed.
func TestFieldsRedacted(t *testing.T) {
	obs, logs := observer.New(zap.DebugLevel)
	l := Logger(zap.New(obs)).With(zap.String("with", echoed))
	var ne *nilErr
	l.Debug("store said "+echoed,
		zap.String("s", echoed), zap.Error(fmt.Errorf("wrapped: %w", errors.New(echoed))),
		zap.NamedError("answer", errors.New(echoed)), zap.Stringer("st", stringer{}),
		zap.ByteString("b", []byte(echoed)), zap.Int("n", 7), zap.Error(ne))
	entries := logs.All()
	if len(entries) != 1 {
		t.Fatalf("%d entries", len(entries))
	}
	e := entries[0]
	var all strings.Builder
	all.WriteString(e.Message)
	for k, v := range e.ContextMap() {
		fmt.Fprintf(&all, " %s=%v", k, v)
	}
	if strings.Contains(all.String(), token) {
		t.Fatalf("token logged: %s", all.String())
	}
	for _, want := range []string{"X-Amz-Security-Token: REDACTED", "n=7", "error=<nil>"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("%q missing from %s", want, all.String())
		}
	}
	if e.ContextMap()["answer"] == nil || e.ContextMap()["st"] == nil || e.ContextMap()["with"] == nil {
		t.Errorf("a field was lost: %v", e.ContextMap())
	}
}

// TestRegisteredValue: a registered secret is blanked in a field that names no header.
func TestRegisteredValue(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/logredactTestKEY"
	secrets.Register(secret)
	obs, logs := observer.New(zap.InfoLevel)
	Logger(zap.New(obs)).Info("x", zap.Error(errors.New("echo "+secret)))
	if got := logs.All()[0].ContextMap()["error"]; got != "echo REDACTED" {
		t.Errorf("error field %q", got)
	}
}

// TestCoreDecides: the caller's core still decides per entry: a tee writes a line only to its
// cores whose level admits it, and the logger's caller annotation survives.
func TestCoreDecides(t *testing.T) {
	var errorsOnly, everything bytes.Buffer
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = ""
	tee := zapcore.NewTee(
		zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(&errorsOnly), zap.ErrorLevel),
		zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(&everything), zap.DebugLevel),
	)
	l := Logger(zap.New(tee, zap.AddCaller()))
	l.Info("info " + echoed)
	l.Error("error line")
	if strings.Contains(errorsOnly.String(), "info") || !strings.Contains(errorsOnly.String(), "error line") {
		t.Errorf("error-level core got:\n%s", errorsOnly.String())
	}
	if !strings.Contains(everything.String(), "info X-Amz-Security-Token: REDACTED") || strings.Contains(everything.String(), token) {
		t.Errorf("debug-level core got:\n%s", everything.String())
	}
	if !strings.Contains(everything.String(), "logredact_test.go") {
		t.Errorf("caller lost:\n%s", everything.String())
	}
}

// TestWrapOnce: a logger that redacts already, or writes nothing, is not wrapped again.
func TestWrapOnce(t *testing.T) {
	obs, _ := observer.New(zap.DebugLevel)
	l := Logger(zap.New(obs))
	if w := l.With(zap.Int("a", 1)); Logger(l) != l || Logger(w) != w {
		t.Error("a redacting logger was wrapped again")
	}
	nop := zap.NewNop()
	if Logger(nop) != nop || Logger(nil) == nil {
		t.Error("a no-op logger was wrapped")
	}
}
