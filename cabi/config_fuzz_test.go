package cabi

import (
	"context"
	"testing"

	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// FuzzConfig: whatever JSON a C caller hands safeput_open, reading it and turning it into a
// writer is an error naming what is wrong, or a writer; never a panic. The store is in memory,
// so nothing is contacted. Fuzz with
//
//	go test -run '^$' -fuzz FuzzConfig -fuzztime 2m .
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		offline,
		`{"bucket":"b","key":"k","part_size":"5MiB","concurrency":2,"checksum":"crc32c","size":0}`,
		`{"bucket":"b","key":"k","part_size":1,"expected_size":"5TiB","provider":"r2"}`,
		`{"bucket":"b","key":"k","provider":"profile=minio,min=1MiB,max_parts=2","size":9223372036854775807}`,
		`{"bucket":"b","key":"k","concurrency":-1,"part_size":-5,"stall_timeout":"1h1s"}`,
		`{"bucket":"b","key":"k","checksum":null,"expected_size":null,"log_level":"nonsense"}`,
		`{"bucket":"b"} {"key":"k"}`,
		`{"bucket":"b","key":"k","create_only":true,"read_back":true,"content_type":"x/y","stall_timeout":"0s"}`,
		`{"bucket":"b","KEY":"k","key":"k","key":"j"}`,
		"{\"bucket\":\"b\",\"key\":\"k\xff\",\"content_type\":\"\\ud800\"}",
		`{"bucket":"b","key":"k\ufffd\ud83d\ude00","abort_timeout":"1ms"}`,
	} {
		f.Add(s)
	}
	st := memstore.New(memstore.WithBuckets("b"))
	f.Fuzz(func(t *testing.T, text string) {
		c, err := parseConfig(text)
		if err != nil {
			return
		}
		opts, ropts, err := c.writerOptions()
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("config %q refused without a reason", text)
			}
			return
		}
		w, err := writer.New(context.Background(), st, "b", "k", append(opts, func(o *writer.Options) { o.Retry = retry.New(ropts...) })...)
		if err != nil {
			return // options the plan accepted can still meet the writer's own checks
		}
		_ = w.Abort(context.Background())
	})
}
