package otel

import (
	"fmt"
	"reflect"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	sperrors "github.com/safeput/safeput/errors"
)

// The exception event, as the semantic conventions (and Span.RecordError) name it.
const (
	eventException       = "exception"
	attrExceptionType    = attribute.Key("exception.type")
	attrExceptionMessage = attribute.Key("exception.message")
)

// recordFailure sets span's status to err and records err as its exception event, as
// Span.RecordError would but with the message redacted as errors.Redact does: RecordError puts
// err.Error() into the event as it is, and an adapter's error may carry what a store echoed of
// the request (its Authorization header, session token, SSE-C key).
func recordFailure(span trace.Span, err error) {
	msg := sperrors.Redact(err.Error())
	span.AddEvent(eventException, trace.WithAttributes(attrExceptionType.String(typeName(err)), attrExceptionMessage.String(msg)))
	span.SetStatus(codes.Error, msg)
}

// typeName is err's type as RecordError names it: package path and name.
func typeName(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String() // a pointer or another unnamed type
	}
	return fmt.Sprintf("%s.%s", t.PkgPath(), t.Name())
}
