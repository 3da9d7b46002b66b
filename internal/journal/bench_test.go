package journal

import (
	"fmt"
	"testing"
)

// BenchmarkAddPart is the cost of journaling one verified part (write, fsync, rename, fsync of
// the directory) into a record that already holds 64 parts: a 1 GiB object in 16 MiB parts
// journals 64 of them. Run: go test -run='^$' -bench=AddPart ./journal/
func BenchmarkAddPart(b *testing.B) {
	d, err := Create(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	id := testID("bench")
	if err := d.Begin(Record{ID: id, PartSize: 16 << 20, SourceSize: 1 << 30, ChecksumAlgorithm: "CRC64NVME"}); err != nil {
		b.Fatal(err)
	}
	for n := int32(1); n <= 64; n++ {
		if err := d.AddPart(id, Part{Number: n, Size: 16 << 20, Checksum: "AAAAAAAAAAA=", ETag: fmt.Sprintf("%032d", n)}); err != nil {
			b.Fatal(err)
		}
	}
	before := d.Fsyncs()
	for i := 0; b.Loop(); i++ {
		if err := d.AddPart(id, Part{Number: int32(i%64) + 1, Size: 16 << 20, Checksum: "AAAAAAAAAAA=", ETag: fmt.Sprintf("%032d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(d.Fsyncs()-before)/float64(b.N), "fsyncs/op")
}
