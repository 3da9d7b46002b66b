//go:build race

package writer_test

// raceEnabled: the race detector is on, and it makes sync.Pool drop a quarter of what is put
// back, so pooled buffers are re-allocated at random.
const raceEnabled = true
