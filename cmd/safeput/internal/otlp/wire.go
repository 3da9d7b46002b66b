// Package otlp exports the CLI's spans and metrics over OTLP/HTTP in binary protobuf. It encodes
// the OTLP messages by hand with protowire: the official exporters link gRPC, grpc-gateway and the
// protobuf registry, which add more than 10 MB to the binary and 4 MiB to the resident memory at
// start of every run of the CLI, for an export most runs never enable. The figures, and that they
// still hold, come from cd bench && go test -run TestOTLPEncoderAgainstExporters -v .
//
// Field numbers are those of opentelemetry-proto (common/v1, resource/v1, trace/v1, metrics/v1,
// collector/*/v1); the tests decode what this package encodes with the official Go packages.
package otlp

import (
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/protobuf/encoding/protowire"
)

// maxDepth bounds the nesting of attribute values (slices of maps of slices…): the encoder
// recurses over them, and a value built with a cycle-free but absurd depth must not blow the stack.
const maxDepth = 32

// beginMsg starts an embedded message (or any length-delimited field) of field num; endMsg,
// given what beginMsg returned, prefixes it with its length. Encoding in place and shifting once
// at the end avoids sizing every message twice.
func beginMsg(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return b, len(b)
}

func endMsg(b []byte, start int) []byte {
	n := len(b) - start
	sz := protowire.SizeVarint(uint64(n))
	var pad [10]byte
	b = append(b, pad[:sz]...)
	copy(b[start+sz:], b[start:start+n])
	protowire.AppendVarint(b[start:start:start+sz], uint64(n))
	return b
}

// The helpers below leave out proto3 defaults (zero, empty), as the official encoder does; fields
// of a oneof, whose presence is their meaning, are written with the *Always forms.

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringAlways(b, num, s)
}

func appendStringAlways(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendFixed64Always(b, num, v)
}

func appendFixed64Always(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

func appendDouble(b []byte, num protowire.Number, v float64) []byte {
	return appendFixed64(b, num, math.Float64bits(v))
}

func appendDoubleAlways(b []byte, num protowire.Number, v float64) []byte {
	return appendFixed64Always(b, num, math.Float64bits(v))
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

// unixNano is t in the protocol's nanoseconds since the epoch; an unset (or pre-1970) time is 0,
// the protocol's "unknown", not time.Time{}'s far-negative value.
func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	n := t.UnixNano()
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// appendKeyValues appends attrs as repeated KeyValue field num.
func appendKeyValues(b []byte, num protowire.Number, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		b = appendKeyValue(b, num, kv, 0)
	}
	return b
}

// appendSet appends the attributes of set as repeated KeyValue field num.
func appendSet(b []byte, num protowire.Number, set *attribute.Set) []byte {
	if set == nil {
		return b
	}
	it := set.Iter()
	for it.Next() {
		b = appendKeyValue(b, num, it.Attribute(), 0)
	}
	return b
}

// KeyValue: key 1, value 2.
func appendKeyValue(b []byte, num protowire.Number, kv attribute.KeyValue, depth int) []byte {
	b, start := beginMsg(b, num)
	b = appendString(b, 1, string(kv.Key))
	b = appendAnyValue(b, 2, kv.Value, depth)
	return endMsg(b, start)
}

// AnyValue: string 1, bool 2, int 3, double 4, array 5 (ArrayValue: values 1), kvlist 6
// (KeyValueList: values 1), bytes 7. An EMPTY value (or one nested past maxDepth) is an AnyValue
// with none of them set, the protocol's empty value.
func appendAnyValue(b []byte, num protowire.Number, v attribute.Value, depth int) []byte {
	b, start := beginMsg(b, num)
	if depth < maxDepth {
		b = appendAnyValueBody(b, v, depth)
	}
	return endMsg(b, start)
}

func appendAnyValueBody(b []byte, v attribute.Value, depth int) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = appendDoubleAlways(b, 4, v.AsFloat64())
	case attribute.STRING:
		b = appendStringAlways(b, 1, v.AsString())
	case attribute.BYTESLICE:
		b = protowire.AppendTag(b, 7, protowire.BytesType)
		b = protowire.AppendBytes(b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		xs := v.AsBoolSlice()
		return appendArray(b, len(xs), func(i int) attribute.Value { return attribute.BoolValue(xs[i]) }, depth)
	case attribute.INT64SLICE:
		xs := v.AsInt64Slice()
		return appendArray(b, len(xs), func(i int) attribute.Value { return attribute.Int64Value(xs[i]) }, depth)
	case attribute.FLOAT64SLICE:
		xs := v.AsFloat64Slice()
		return appendArray(b, len(xs), func(i int) attribute.Value { return attribute.Float64Value(xs[i]) }, depth)
	case attribute.STRINGSLICE:
		xs := v.AsStringSlice()
		return appendArray(b, len(xs), func(i int) attribute.Value { return attribute.StringValue(xs[i]) }, depth)
	case attribute.SLICE:
		xs := v.AsSlice()
		return appendArray(b, len(xs), func(i int) attribute.Value { return xs[i] }, depth)
	case attribute.MAP:
		var start int
		b, start = beginMsg(b, 6)
		for _, kv := range v.AsMap() {
			b = appendKeyValue(b, 1, kv, depth+1)
		}
		return endMsg(b, start)
	}
	return b
}

// appendArray appends an ArrayValue (values 1) of the n values at(i) as AnyValue field 5.
func appendArray(b []byte, n int, at func(int) attribute.Value, depth int) []byte {
	b, start := beginMsg(b, 5)
	for i := range n {
		b = appendAnyValue(b, 1, at(i), depth+1)
	}
	return endMsg(b, start)
}

// Resource: attributes 1. A nil resource is an empty one.
func appendResource(b []byte, num protowire.Number, res *resource.Resource) []byte {
	b, start := beginMsg(b, num)
	if res != nil {
		b = appendKeyValues(b, 1, res.Attributes())
	}
	return endMsg(b, start)
}

// InstrumentationScope: name 1, version 2, attributes 3.
func appendScope(b []byte, num protowire.Number, s instrumentation.Scope) []byte {
	b, start := beginMsg(b, num)
	b = appendString(b, 1, s.Name)
	b = appendString(b, 2, s.Version)
	b = appendSet(b, 3, &s.Attributes)
	return endMsg(b, start)
}

// schemaURL of a resource, which may be nil.
func schemaURL(res *resource.Resource) string {
	if res == nil {
		return ""
	}
	return res.SchemaURL()
}
