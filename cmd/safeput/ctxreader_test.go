package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/iotest"
)

// TestCtxReaderStreamsWithoutGarbage reads a 32 MiB stream through ctxReader, in odd-sized
// source reads and odd-sized caller reads, and checks the bytes and what reading them allocated:
// the reader's two buffers take turns, so the stream costs the same few hundred KiB however long
// it is (a fresh 256 KiB buffer per read made it 32 MiB).
func TestCtxReaderStreamsWithoutGarbage(t *testing.T) {
	const size = 32 << 20
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{3}).Read(data)
	// OneByteReader would be slow; HalfReader makes every source read short.
	src := iotest.HalfReader(bytes.NewReader(data))
	got, alloc := readInOddSizes(t, func() io.Reader { return newCtxReader(context.Background(), src) }, size)
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes that differ from the %d written", len(got), len(data))
	}
	const bound = 1 << 20 // the two 256 KiB buffers and small change
	if alloc > bound {
		t.Errorf("reading a %d MiB stream allocated %d B, want at most %d: buffers are not reused", size>>20, alloc, bound)
	}
}

// readInOddSizes opens a reader and reads it to EOF in 100,003-byte reads, returning the bytes
// and what the process allocated from the open to the end (its buffer for the bytes aside).
func readInOddSizes(t *testing.T, open func() io.Reader, size int) (got []byte, allocated uint64) {
	t.Helper()
	got = make([]byte, 0, size)
	buf := make([]byte, 100_003)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := open()
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	return got, after.TotalAlloc - before.TotalAlloc
}

// TestCtxReaderReturnsWhenCanceled checks that a Read blocked on a source that never answers
// returns the context's error once it ends.
func TestCtxReaderReturnsWhenCanceled(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r := newCtxReader(ctx, pr)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel returned %v, want context.Canceled", err)
	}
}
