package writer

import (
	"context"
	"reflect"
	"weak"

	"github.com/safeput/safeput/store"
)

// BudgetRoundTrip takes and returns one buffer, for the pool benchmark.
func BudgetRoundTrip(b *Budget, size int) {
	buf, err := b.get(context.Background(), size)
	if err == nil {
		b.put(buf)
	}
}

// FactsKey is the key of st's facts for bucket; it holds st only weakly.
func FactsKey(st store.Store, bucket string) any {
	return factsKey{store: weak.Make((*byte)(reflect.ValueOf(st).UnsafePointer())), bucket: bucket}
}

// Remembered reports whether facts are kept under key.
func Remembered(key any) bool {
	_, ok := facts.Load(key)
	return ok
}

// PartsShowDamage exposes partsShowDamage: when Recover may call a commit damaged.
var PartsShowDamage = partsShowDamage

// LentDropped is how many part buffers w left to the garbage collector because a request that
// had returned still read them.
func LentDropped(w *Writer) int64 { return w.lentDropped.Load() }
