// Package probe marks the requests a write sends to learn what a store does rather than to store
// the object (package writer's checksum probe), so that test tooling (store/storetest/faulty) can tell
// them from the write's own requests.
package probe

import "context"

type key struct{}

// Mark returns ctx marking its request as a probe.
func Mark(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, true) }

// Marked reports whether ctx's request is a probe.
func Marked(ctx context.Context) bool {
	v, _ := ctx.Value(key{}).(bool)
	return v
}
