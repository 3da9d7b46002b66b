package columnar

import (
	"bytes"
	"context"
	stderrors "errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// tableRows makes an object of several 5 MiB parts in either format, ranged reads and all.
const tableRows = 250_000

// onAdapter runs fn on every server through one adapter only: the table round trips are
// the slow tests, and the adapters are each exercised by one format (both formats' fault tests
// use both).
func onAdapter(t *testing.T, name string, fn func(t *testing.T, env testkit.Env)) {
	t.Helper()
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) {
		for _, a := range testkit.Adapters {
			if a.Name != name {
				continue
			}
			t.Run(a.Name, func(t *testing.T) {
				st, err := a.New(srv)
				if err != nil {
					t.Fatalf("%s adapter on %s: %v", a.Name, srv.Name, err)
				}
				fn(t, testkit.Env{Srv: srv, Server: srv.Name, Store: st, Bucket: s3test.NewBucket(t, srv), Adapter: a.Name})
			})
		}
	})
}

func checkedAlloc(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// newUploader is the Uploader a test's writes to st share.
func newUploader(t *testing.T, st store.Store, opts ...func(*writer.Options)) *writer.Uploader {
	t.Helper()
	up, err := writer.NewUploader(st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return up
}

// TestParquetTableRoundTrip streams a table through pqarrow into a Writer and reads them
// back with ranged GETs: same rows, same id sum, same string and vector hashes.
func TestParquetTableRoundTrip(t *testing.T) {
	onAdapter(t, "aws", func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		gen := &Generator{Rows: tableRows, Mem: checkedAlloc(t)}
		res, wrote, err := WriteParquet(ctx, newUploader(t, env.Store, Options()...), env.Bucket, "tables/t.parquet", gen)
		if err != nil {
			t.Fatalf("WriteParquet: %v", err)
		}
		wroteIn := time.Since(start)
		if !res.Multipart || res.Parts < 2 || res.PartSize != 5<<20 || !res.VerifiedStrong {
			t.Fatalf("result %+v: want a multipart upload of 5 MiB parts, verified by content", res)
		}
		start = time.Now()
		read, ra, err := ReadParquet(ctx, env.Store, env.Bucket, "tables/t.parquet")
		if err != nil {
			t.Fatalf("ReadParquet: %v", err)
		}
		if read != wrote || read.Rows != tableRows {
			t.Fatalf("read back %+v, wrote %+v", read, wrote)
		}
		if ra.Requests.Load() < 2 {
			t.Errorf("read with %d GETs; want ranged reads (footer, then column chunks)", ra.Requests.Load())
		}
		t.Logf("parquet: %d rows, %d bytes in %d parts (verified %s) written in %v; read back with %d ranged GETs (%d bytes) in %v; digest %+v",
			read.Rows, res.Size, res.Parts, res.Verified, wroteIn.Round(time.Millisecond), ra.Requests.Load(), ra.Bytes.Load(),
			time.Since(start).Round(time.Millisecond), read)
	})
}

// TestIPCTableRoundTrip is the same round trip for an Arrow IPC file, whose Close does not close
// the sink: WriteIPC commits with its own sink.Close.
func TestIPCTableRoundTrip(t *testing.T) {
	onAdapter(t, "minio", func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		gen := &Generator{Rows: tableRows, Mem: checkedAlloc(t)}
		res, wrote, err := WriteIPC(ctx, newUploader(t, env.Store, Options()...), env.Bucket, "tables/t.arrow", gen)
		if err != nil {
			t.Fatalf("WriteIPC: %v", err)
		}
		wroteIn := time.Since(start)
		if !res.Multipart || res.Parts < 2 || !res.VerifiedStrong {
			t.Fatalf("result %+v: want a multipart upload, verified by content", res)
		}
		start = time.Now()
		read, ra, err := ReadIPC(ctx, env.Store, env.Bucket, "tables/t.arrow")
		if err != nil {
			t.Fatalf("ReadIPC: %v", err)
		}
		if read != wrote || read.Rows != tableRows {
			t.Fatalf("read back %+v, wrote %+v", read, wrote)
		}
		t.Logf("ipc: %d rows, %d bytes in %d parts (verified %s) written in %v; read back with %d ranged GETs in %v",
			read.Rows, res.Size, res.Parts, res.Verified, wroteIn.Round(time.Millisecond), ra.Requests.Load(), time.Since(start).Round(time.Millisecond))
	})
}

// assertNothingLanded checks the promise for a failed write: a classified error, nothing at the
// key, no incomplete upload.
func assertNothingLanded(t *testing.T, env testkit.Env, key string, err error, want sperrors.Kind) {
	t.Helper()
	var e *sperrors.Error
	if !stderrors.As(err, &e) {
		t.Fatalf("error does not unwrap to *errors.Error: %v", err)
	}
	if want != sperrors.Unknown && e.Kind != want {
		t.Errorf("kind %s, want %s: %v", e.Kind, want, err)
	}
	if s3test.Exists(t, env.Srv, env.Bucket, key) {
		t.Errorf("%s exists after a failed write", key)
	}
	if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, ""); len(ups) != 0 {
		t.Errorf("incomplete uploads left behind: %v", ups)
	}
}

// faultRows makes about 13 MiB of Parquet (three 5 MiB parts), enough for a part-2 fault.
const faultRows = 250_000

// footerRows makes a little over one 5 MiB part of Parquet: the first part is sent before the
// footer fails, so there is a multipart upload to abort.
const footerRows = 120_000

// TestFaultMidStream: UploadPart of part 2 is Forbidden while the columnar writer is still
// writing. The error reaches the caller, the upload is aborted, nothing is visible.
func TestFaultMidStream(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, format := range []string{"parquet", "ipc"} {
			t.Run(format, func(t *testing.T) {
				st := faulty.New(env.Store, faulty.Rule{Op: faulty.OpUploadPart, Part: 2, Fault: faulty.Forbidden()})
				key := "faulty/t." + format
				// Go's allocator, not a checked one: when a page write fails inside
				// pqarrow's Write, arrow-go v18.8.0 sometimes keeps a reference to the
				// batch's vector values and never releases it (a leak in arrow-go's error
				// path, harmless with Go's GC-backed allocator).
				gen := &Generator{Rows: faultRows}
				var err error
				if format == "parquet" {
					_, _, err = WriteParquet(ctx, newUploader(t, st, Options()...), env.Bucket, key, gen)
				} else {
					_, _, err = WriteIPC(ctx, newUploader(t, st, Options()...), env.Bucket, key, gen)
				}
				if err == nil {
					t.Fatal("write succeeded through a Forbidden part")
				}
				if st.Count(faulty.Forbidden()) == 0 {
					t.Fatal("the fault never fired: the table is too small for a second part")
				}
				t.Logf("%s: %v", format, err)
				assertNothingLanded(t, env, key, err, sperrors.Permanent)
			})
		}
	})
}

// TestFooterFailure: the sink's Write fails while pqarrow writes the footer (the trailing
// "PAR1"), after every row group went out. Whatever pqarrow's Close makes of it, the sink's
// Close must not commit: the write fails, the multipart upload is aborted, nothing is visible.
func TestFooterFailure(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		key := "footer/t.parquet"
		w, err := newUploader(t, env.Store, Options()...).New(ctx, env.Bucket, key)
		if err != nil {
			t.Fatal(err)
		}
		sink := NewSink(w)
		injected := stderrors.New("injected: footer write failed")
		var writes, footerHits int
		sink.failWrite = func(p []byte) error {
			writes++
			if writes > 1 && bytes.Equal(p, []byte("PAR1")) { // not the leading magic: the footer's
				footerHits++
				return injected
			}
			return nil
		}
		gen := &Generator{Rows: footerRows, Mem: checkedAlloc(t)}
		_, err = writeParquet(sink, gen)
		if footerHits != 1 {
			t.Fatalf("footer magic written %d times through the sink, want 1", footerHits)
		}
		if !stderrors.Is(err, injected) {
			t.Fatalf("writeParquet: %v, want the footer failure", err)
		}
		if cerr := sink.Close(); !stderrors.Is(cerr, injected) {
			t.Errorf("sink.Close after the failure: %v, want the footer failure again", cerr)
		}
		if w.Result() != nil {
			t.Error("the Writer has a Result: it committed")
		}
		assertNothingLanded(t, env, key, err, sperrors.Unknown)
	})
}

// TestFooterErrorSwallowed plays a columnar writer that loses its footer error and calls Close
// anyway (arrow-go's Close did so before v18.8): the sink's Close still fails and aborts.
func TestFooterErrorSwallowed(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		key := "swallowed/blob"
		// A store that refuses every part: the Writer's own sticky error is the failure.
		st := faulty.New(env.Store, faulty.Always(faulty.OpUploadPart, faulty.Forbidden()))
		w, err := newUploader(t, st, Options()...).New(ctx, env.Bucket, key)
		if err != nil {
			t.Fatal(err)
		}
		sink := NewSink(w)
		chunk := bytes.Repeat([]byte{7}, 1<<20)
		// Write until the failed part surfaces, as a footer write would, ignoring the error the
		// way a swallowing Close does.
		for range 40 {
			if _, err := sink.Write(chunk); err != nil {
				break
			}
		}
		err = sink.Close()
		if err == nil {
			t.Fatal("Close committed after a failed write")
		}
		assertNothingLanded(t, env, key, err, sperrors.Permanent)
	})
}

// TestFirstWriteCannotFail: against a store that refuses everything, creating the Parquet
// writer (its 4-byte magic write) still succeeds, because the Writer buffers; the failure comes
// back from Close as a classified error, and nothing panics.
func TestFirstWriteCannotFail(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st := faulty.New(env.Store, faulty.Always(faulty.AnyOp, faulty.Forbidden()))
		w, err := newUploader(t, st, Options()...).New(ctx, env.Bucket, "refused/t.parquet")
		if err != nil {
			t.Fatal(err)
		}
		sink := NewSink(w)
		fw, err := pqarrow.NewFileWriter(Schema, sink, nil, pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatalf("NewFileWriter failed on the magic write: %v", err)
		}
		rec := (&Generator{Rows: 1000}).Next()
		defer rec.Release()
		if err := fw.Write(rec); err != nil {
			t.Fatalf("Write of a small batch hit the network: %v", err)
		}
		err = fw.Close()
		var e *sperrors.Error
		if !stderrors.As(err, &e) || e.Kind != sperrors.Permanent {
			t.Fatalf("Close: %v, want a permanent *errors.Error from the commit", err)
		}
	})
}
