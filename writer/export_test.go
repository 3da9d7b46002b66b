package writer

import "context"

// BudgetRoundTrip takes and returns one buffer, for the pool benchmark.
func BudgetRoundTrip(b *Budget, size int) {
	buf, err := b.get(context.Background(), size)
	if err == nil {
		b.put(buf)
	}
}
