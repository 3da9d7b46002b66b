package writer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// BenchmarkJournalCost uploads 256 MiB in 16 MiB parts, 4 in flight, with and without a
// journal, to the in-memory store (the journal's cost undiluted by a network) and to the test
// server, and reports MiB/s and the journal's fsyncs per GiB. Run:
//
//	bash scripts/with-s3.sh go test -run='^$' -bench=JournalCost -benchtime=3x ./writer/
func BenchmarkJournalCost(b *testing.B) {
	const size, partSize, conc = 256 << 20, 16 << 20, 4
	targets := []struct {
		name   string
		st     store.Store
		bucket string
	}{{name: "memstore", st: memstore.New(memstore.WithBuckets("bench")), bucket: "bench"}}
	if srv, ok := s3test.Lookup(); ok {
		st, err := testkit.Adapters[0].New(srv) // aws-sdk-go-v2: the journal cost does not depend on the adapter
		if err != nil {
			b.Fatal(err)
		}
		targets = append(targets, struct {
			name   string
			st     store.Store
			bucket string
		}{name: "versitygw", st: st, bucket: s3test.NewBucket(b, srv)})
	}
	for _, tg := range targets {
		for _, journaled := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/journal=%v", tg.name, journaled), func(b *testing.B) {
				b.SetBytes(size)
				var fsyncs int64
				for i := 0; i < b.N; i++ {
					opts := []func(*writer.Options){func(o *writer.Options) { o.Profile = "versitygw"; o.PartSize = partSize; o.Concurrency = conc }}
					var j *journal.Dir
					if journaled {
						var err error
						if j, err = journal.Create(filepath.Join(b.TempDir(), "j")); err != nil {
							b.Fatal(err)
						}
						opts = append(opts, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), "bench" })
					}
					res, err := writer.Upload(context.Background(), tg.st, tg.bucket, "journal-cost", newGen(size), opts...)
					if err != nil {
						b.Fatal(err)
					}
					if res.Size != size {
						b.Fatalf("size %d", res.Size)
					}
					if j != nil {
						fsyncs += j.Fsyncs()
					}
				}
				b.ReportMetric(float64(fsyncs)/float64(b.N)*float64(1<<30)/size, "fsyncs/GiB")
			})
		}
	}
}
