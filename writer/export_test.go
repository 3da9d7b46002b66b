package writer

import (
	"context"

	"github.com/safeput/safeput/retry"
)

// BudgetRoundTrip takes and returns one buffer, for the pool benchmark.
func BudgetRoundTrip(b *Budget, size int) {
	buf, _, _, err := b.get(context.Background(), size)
	if err == nil {
		b.put(buf)
	}
}

// PolicyOf is the retry policy w runs its requests with.
func PolicyOf(w *Writer) *retry.Policy { return w.cfg.policy }

// PartsShowDamage exposes partsShowDamage: when Recover may call a commit damaged.
var PartsShowDamage = partsShowDamage

// LentDropped is how many part buffers w left to the garbage collector because a request that
// had returned still read them.
func LentDropped(w *Writer) int64 { return w.intake.lentDropped.Load() }

// MD5Bytes is how many bytes w hashed by MD5.
func MD5Bytes(w *Writer) int64 { return w.tally.md5Bytes.Load() }

// ProbeTimeout bounds the checksum probe's create and part, and so a receipt's wait for its answer.
const ProbeTimeout = probeTimeout
