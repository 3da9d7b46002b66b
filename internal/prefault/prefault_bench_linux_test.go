package prefault

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkFreshBuffers fills what a stream's first write fills at the default settings, 4 × 16
// MiB of part buffers no one has touched, in the writer's 256 KiB reads: page by page as the
// bytes land, and mapped ahead by Ahead. ns/op is the cost of the pages (the copy is the same).
func BenchmarkFreshBuffers(b *testing.B) {
	const buffers, size, chunk = 4, 16 << 20, 256 << 10
	src := make([]byte, chunk)
	for _, ahead := range []bool{false, true} {
		name := "touched"
		if ahead {
			name = "mapped-ahead"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(buffers * size)
			for b.Loop() {
				b.StopTimer()
				bufs := make([][]byte, buffers)
				for i := range bufs {
					m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
					if err != nil {
						b.Fatal(err)
					}
					_ = unix.Madvise(m, unix.MADV_NOHUGEPAGE) // as the Go heap's memory is, by default
					bufs[i] = m
				}
				b.StartTimer()
				for _, buf := range bufs {
					mapped := 0
					for fill := 0; fill < size; fill += chunk {
						if ahead && fill+chunk > mapped {
							mapped = Ahead(buf, mapped, fill+chunk)
						}
						copy(buf[fill:], src)
					}
				}
				b.StopTimer()
				for _, buf := range bufs {
					_ = unix.Munmap(buf)
				}
				b.StartTimer()
			}
		})
	}
}
