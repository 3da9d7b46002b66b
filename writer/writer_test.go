package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The SDKs' HTTP transports keep idle keep-alive connections by design.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

const part = 5 << 20 // the smallest part the test servers accept

// testOpts: the server's own profile and 5 MiB parts keep the tests small.
func testOpts(env testkit.Env, extra ...func(*writer.Options)) []func(*writer.Options) {
	return append([]func(*writer.Options){func(o *writer.Options) { o.Profile = env.Profile(); o.PartSize = part }}, extra...)
}

// Every size that has bitten multipart uploaders: empty, one byte, around a part boundary, and
// several parts plus a byte; read back byte-for-byte through an independent client.
func TestWriterSizes(t *testing.T) {
	sizes := []int{0, 1, part - 1, part, part + 1, 3*part + 1}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, size := range sizes {
			t.Run(fmt.Sprint(size), func(t *testing.T) {
				data := s3test.RandomBytes(size)
				key := fmt.Sprintf("sizes/%d", size)
				w, err := writer.New(context.Background(), env.Store, env.Bucket, key, testOpts(env)...)
				if err != nil {
					t.Fatal(err)
				}
				// Odd-sized writes cross part boundaries at every offset.
				for off := 0; off < len(data); off += 777_777 {
					if _, err := w.Write(data[off:min(off+777_777, len(data))]); err != nil {
						t.Fatalf("write at %d: %v", off, err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
				res := w.Result()
				if res == nil || res.Size != int64(size) {
					t.Fatalf("result %+v", res)
				}
				if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
					t.Fatalf("read back %d bytes, wrote %d: not identical", len(got), size)
				}
				wantParts := 0
				if size > part {
					wantParts = (size + part - 1) / part
				}
				if res.Parts != wantParts || res.Multipart != (wantParts > 0) {
					t.Fatalf("parts %d multipart %v, want %d", res.Parts, res.Multipart, wantParts)
				}
				if !res.VerifiedStrong && size > 0 {
					t.Errorf("verified by %s only", res.Verified)
				}
				if ids := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key); len(ids) != 0 {
					t.Fatalf("incomplete uploads left: %v", ids)
				}
				// Close twice returns the first outcome.
				if err := w.Close(); err != nil {
					t.Fatalf("second close: %v", err)
				}
			})
		}
	})
}

// Upload uses what the reader offers: ReaderAt of known size (no part buffers), a plain
// stream of unknown length, and a larger object at concurrency 1 and 8.
func TestUploadSources(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		data := s3test.RandomBytes(4*part + 12345)
		cases := []struct {
			name string
			r    func() io.Reader
			opts []func(*writer.Options)
		}{
			{"readerat", func() io.Reader { return bytes.NewReader(data) }, nil},
			{"stream", func() io.Reader { return struct{ io.Reader }{bytes.NewReader(data)} }, nil},
			{"stream-c1", func() io.Reader { return struct{ io.Reader }{bytes.NewReader(data)} }, []func(*writer.Options){func(o *writer.Options) { o.Concurrency = 1 }}},
			{"readerat-c8", func() io.Reader { return bytes.NewReader(data) }, []func(*writer.Options){func(o *writer.Options) { o.Concurrency = 8 }}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				key := "upload/" + tc.name
				res, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, tc.r(), testOpts(env, tc.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				if res.Size != int64(len(data)) || res.Parts != 5 {
					t.Fatalf("result size %d parts %d", res.Size, res.Parts)
				}
				if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
					t.Fatal("read back differs")
				}
				if res.BytesSent < res.Size {
					t.Fatalf("bytes sent %d < size %d", res.BytesSent, res.Size)
				}
			})
		}
	})
}

// A larger object, streamed: 100 MiB read back identical.
func TestUpload100MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		data := s3test.RandomBytes(100 << 20)
		res, err := writer.Upload(context.Background(), env.Store, env.Bucket, "big", struct{ io.Reader }{bytes.NewReader(data)},
			testOpts(env, func(o *writer.Options) { o.PartSize = 8 << 20; o.Concurrency = 4 })...)
		if err != nil {
			t.Fatal(err)
		}
		if res.Parts != 13 || !res.VerifiedStrong {
			t.Fatalf("parts %d verified %s", res.Parts, res.Verified)
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, "big"); !bytes.Equal(got, data) {
			t.Fatal("read back differs")
		}
	})
}

// Create-only onto an existing key: Precondition, and the existing object is unchanged. The
// same bytes again are an idempotent success.
func TestCreateOnly(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, size := range []int{100, 2*part + 3} {
			key := fmt.Sprintf("create-only/%d", size)
			first := s3test.RandomBytes(size)
			if _, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, bytes.NewReader(first), testOpts(env, func(o *writer.Options) { o.CreateOnly = true })...); err != nil {
				t.Fatal(err)
			}
			other := s3test.RandomBytes(size)
			_, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, bytes.NewReader(other), testOpts(env, func(o *writer.Options) { o.CreateOnly = true })...)
			if !errors.Is(err, sperrors.Precondition) {
				t.Fatalf("size %d: want Precondition, got %v", size, err)
			}
			if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, first) {
				t.Fatal("existing object changed")
			}
			res, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, bytes.NewReader(first), testOpts(env, func(o *writer.Options) { o.CreateOnly = true })...)
			if err != nil || !res.AlreadyExisted {
				t.Fatalf("same bytes again: %v %+v", err, res)
			}
			if ids := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key); len(ids) != 0 {
				t.Fatalf("incomplete uploads left: %v", ids)
			}
		}
	})
}

// Cancelling mid-upload: Close returns Canceled and no incomplete upload remains.
func TestCancelMidUpload(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithCancel(context.Background())
		w, err := writer.New(ctx, env.Store, env.Bucket, "cancel", testOpts(env)...)
		if err != nil {
			t.Fatal(err)
		}
		chunk := s3test.RandomBytes(part)
		for i := 0; i < 3; i++ {
			if _, err := w.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		_, werr := w.Write(chunk)
		cerr := w.Close()
		if !errors.Is(cerr, sperrors.Canceled) {
			t.Fatalf("close: want Canceled, got %v (write: %v)", cerr, werr)
		}
		if ids := s3test.IncompleteUploads(t, env.Srv, env.Bucket, ""); len(ids) != 0 {
			t.Fatalf("incomplete uploads left: %v", ids)
		}
		if s3test.Exists(t, env.Srv, env.Bucket, "cancel") {
			t.Fatal("a cancelled write is visible")
		}
	})
}

// Abort discards a started multipart upload; nothing visible, nothing left.
func TestAbort(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		w, err := writer.New(context.Background(), env.Store, env.Bucket, "aborted", testOpts(env)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(s3test.RandomBytes(2*part + 1)); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("x")); err == nil {
			t.Fatal("write after abort succeeded")
		}
		if err := w.Close(); err == nil {
			t.Fatal("close after abort succeeded")
		}
		if ids := s3test.IncompleteUploads(t, env.Srv, env.Bucket, ""); len(ids) != 0 {
			t.Fatalf("incomplete uploads left: %v", ids)
		}
		if s3test.Exists(t, env.Srv, env.Bucket, "aborted") {
			t.Fatal("aborted object is visible")
		}
	})
}

// 16 writers sharing a 128 MiB budget never hold more than 128 MiB of buffers (measured by the
// budget's own peak, not timed), and all land.
func TestSharedBudget(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		budget, err := writer.NewBudget(128 << 20)
		if err != nil {
			t.Fatal(err)
		}
		data := s3test.RandomBytes(6 * part)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("budget/%d", i)
				_, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, struct{ io.Reader }{bytes.NewReader(data)},
					testOpts(env, func(o *writer.Options) { o.MemoryBudget = budget; o.Concurrency = 4 })...)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if peak := budget.Peak(); peak > 128<<20 || peak == 0 {
			t.Fatalf("budget peak %d bytes, limit %d", peak, 128<<20)
		}
		if budget.InUse() != 0 {
			t.Fatalf("%d bytes still held", budget.InUse())
		}
	})
}

// A CreateMultipartUpload the adapter refuses before sending (minio-go checks bucket names; the
// server answers the other adapter) created nothing: the failure is permanent and reports no
// abort failure and nothing left behind, where it once claimed a lost answer and an upload left.
func TestCreateRefusedBeforeSending(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		w, err := writer.New(context.Background(), env.Store, "b", "k", testOpts(env)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(make([]byte, part+1)); err == nil {
			t.Fatal("a multipart write to bucket \"b\" succeeded")
		}
		err = w.Close()
		var se *sperrors.Error
		if !errors.As(err, &se) || se.Kind != sperrors.Permanent || se.AbortFailed || strings.Contains(err.Error(), "left") {
			t.Fatalf("close: %v; want permanent, with no abort failure and nothing said to be left", err)
		}
	})
}

// Bad input: a clear error of the one kind that case calls for (a profile's rule broken is
// Compatibility, the caller's context Canceled, the rest Permanent), nothing at the key touched.
func TestBadInput(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx := context.Background()
		existing := s3test.RandomBytes(10)
		if _, err := writer.Upload(ctx, env.Store, env.Bucket, "keep", bytes.NewReader(existing), testOpts(env)...); err != nil {
			t.Fatal(err)
		}
		small, _ := writer.NewBudget(1 << 20)
		for _, c := range []struct {
			name string
			kind sperrors.Kind
			fn   func() error
		}{
			{"nil store", sperrors.Permanent, func() error { _, err := writer.New(ctx, nil, env.Bucket, "keep"); return err }},
			{"nil reader", sperrors.Permanent, func() error { _, err := writer.Upload(ctx, env.Store, env.Bucket, "keep", nil); return err }},
			{"empty bucket", sperrors.Permanent, func() error { _, err := writer.New(ctx, env.Store, "", "keep"); return err }},
			{"long key", sperrors.Permanent, func() error { _, err := writer.New(ctx, env.Store, env.Bucket, string(make([]byte, 1025))); return err }},
			{"bad utf8 key", sperrors.Permanent, func() error { _, err := writer.New(ctx, env.Store, env.Bucket, "\xff\xfe"); return err }},
			{"negative size", sperrors.Permanent, func() error {
				_, err := writer.New(ctx, env.Store, env.Bucket, "keep", func(o *writer.Options) { o.Size = -5 })
				return err
			}},
			{"part below minimum", sperrors.Compatibility, func() error {
				_, err := writer.New(ctx, env.Store, env.Bucket, "keep", func(o *writer.Options) { o.Profile = "minio"; o.PartSize = 4 << 20 })
				return err
			}},
			{"zero concurrency", sperrors.Permanent, func() error {
				_, err := writer.New(ctx, env.Store, env.Bucket, "keep", testOpts(env, func(o *writer.Options) { o.Concurrency = 0 })...)
				return err
			}},
			{"budget too small", sperrors.Permanent, func() error {
				_, err := writer.New(ctx, env.Store, env.Bucket, "keep", testOpts(env, func(o *writer.Options) { o.MemoryBudget = small })...)
				return err
			}},
			{"unknown profile", sperrors.Permanent, func() error {
				_, err := writer.New(ctx, env.Store, env.Bucket, "keep", func(o *writer.Options) { o.Profile = "nope" })
				return err
			}},
			{"short stream", sperrors.Permanent, func() error {
				_, err := writer.Upload(ctx, env.Store, env.Bucket, "keep", struct{ io.Reader }{bytes.NewReader(make([]byte, 5))}, testOpts(env, func(o *writer.Options) { o.Size = 10 })...)
				return err
			}},
			{"long stream", sperrors.Permanent, func() error {
				_, err := writer.Upload(ctx, env.Store, env.Bucket, "keep", struct{ io.Reader }{bytes.NewReader(make([]byte, 50))}, testOpts(env, func(o *writer.Options) { o.Size = 10 })...)
				return err
			}},
			{"cancelled context", sperrors.Canceled, func() error {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				_, err := writer.Upload(cctx, env.Store, env.Bucket, "keep", bytes.NewReader(make([]byte, 5)), testOpts(env)...)
				return err
			}},
		} {
			err := c.fn()
			var se *sperrors.Error
			if !errors.As(err, &se) {
				t.Errorf("%s: want a *errors.Error, got %v", c.name, err)
				continue
			}
			if se.Kind != c.kind {
				t.Errorf("%s: kind %s, want %s: %v", c.name, se.Kind, c.kind, err)
			}
			if se.Message == "" && se.Err == nil {
				t.Errorf("%s: error names nothing: %v", c.name, err)
			}
		}
		// More bytes than the declared size: the error says the declared size was exceeded,
		// for a single PUT (whose plan has no second part) as for a multipart size.
		for _, declared := range []int64{100, 5 << 20} {
			w, err := writer.New(ctx, env.Store, env.Bucket, "keep", testOpts(env, func(o *writer.Options) { o.Size = declared; o.PartSize = 5 << 20 })...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.Write(make([]byte, declared+4900))
			if !errors.Is(err, sperrors.Permanent) || !strings.Contains(err.Error(), fmt.Sprintf("declared size %d", declared)) {
				t.Errorf("size %d, %d bytes written: %v; want permanent, naming the declared size", declared, declared+4900, err)
			}
			if err := w.Close(); err == nil {
				t.Errorf("size %d exceeded: close succeeded", declared)
			}
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, "keep"); !bytes.Equal(got, existing) {
			t.Fatal("bad input touched the existing object")
		}
		// Write after Close.
		w, _ := writer.New(ctx, env.Store, env.Bucket, "closed", testOpts(env)...)
		_ = w.Close()
		if _, err := w.Write([]byte("x")); !errors.Is(err, writer.ErrClosed) {
			t.Fatalf("write after close: %v", err)
		}
	})
}

// The observer sees parts, verification and the end; the Result names the verification.
func TestObserverAndResult(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		var mu sync.Mutex
		seen := map[writer.EventType]int{}
		data := s3test.RandomBytes(2*part + 10)
		res, err := writer.Upload(context.Background(), env.Store, env.Bucket, "observed", bytes.NewReader(data),
			testOpts(env, func(o *writer.Options) {
				o.Observer = func(e writer.Event) {
					mu.Lock()
					seen[e.Type]++
					mu.Unlock()
				}
			})...)
		if err != nil {
			t.Fatal(err)
		}
		if seen[writer.EventPartDone] != 3 || seen[writer.EventVerify] != 1 || seen[writer.EventDone] != 1 {
			t.Fatalf("events %v", seen)
		}
		// The profile's CRC: CRC32C under minio and versitygw, CRC64NVME otherwise.
		rules, _ := multipart.Profile(env.Profile())
		sum, _ := integrity.Sum(rules.Checksum(), data)
		if res.Checksum.Algorithm != rules.Checksum() || res.Checksum.Value != sum {
			t.Fatalf("result checksum %s %s, want %s %s", res.Checksum.Algorithm, res.Checksum.Value, rules.Checksum(), sum)
		}
		if res.Elapsed <= 0 || res.Elapsed > time.Hour {
			t.Fatalf("elapsed %v", res.Elapsed)
		}
	})
}

// With no options at all (the strict profile) the writer offers its CRC32C header anyway and
// compares the full-object checksum the store reports with its own, so verification is strong on
// the servers that keep checksums: Versity S3 Gateway and MinIO keep the one they were sent
// (before strong verification became the default, MinIO proved the length only). A single PUT
// is proven by its answer's MD5 ETag before that.
func TestDefaultsVerifyAgainstStoreChecksum(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		// Every server verifies strongly at defaults: the CRC32C header is offered even under
		// the strict profile, so MinIO (which stores no checksum it was not sent) reports it too.
		wantMethod := verify.MethodCRC32C
		if env.Srv.IgnoresChecksums() {
			// Ceph RGW keeps no checksum; its MD5 ETags (single and MD5-of-MD5s-N) are the proof.
			wantMethod = verify.MethodETagMD5
		}
		for _, size := range []int{1000, 20 << 20} {
			data := s3test.RandomBytes(size)
			key := fmt.Sprintf("defaults/%d", size)
			res, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
				t.Fatal("read back differs")
			}
			sum, _ := integrity.Sum(store.ChecksumCRC32C, data)
			want := wantMethod
			if !res.Multipart {
				// A fresh Uploader's single PUT: its answer's ETag is the MD5 of the body.
				want = verify.MethodETagMD5
			}
			if res.Checksum.Value != sum || res.Verified != want {
				t.Fatalf("size %d: checksum %s (want %s), verified %s (want %s)", size, res.Checksum.Value, sum, res.Verified, want)
			}
		}
	})
}

// Abort from another goroutine while a producer is writing: no race (run with -race), the
// producer's Write fails, nothing is left, and the budget gets every buffer back.
func TestAbortWhileWriting(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		budget, _ := writer.NewBudget(4 * part)
		// The abort must meet an upload that has a part stored and more on the way: wait for
		// the writer's first part-done event rather than for a guessed time.
		partDone := make(chan struct{})
		var once sync.Once
		observe := func(o *writer.Options) {
			o.Observer = func(e writer.Event) {
				if e.Type == writer.EventPartDone {
					once.Do(func() { close(partDone) })
				}
			}
		}
		w, err := writer.New(context.Background(), env.Store, env.Bucket, "abort-concurrent", testOpts(env, func(o *writer.Options) { o.MemoryBudget = budget }, observe)...)
		if err != nil {
			t.Fatal(err)
		}
		chunk := s3test.RandomBytes(256 << 10)
		done := make(chan error, 1)
		go func() {
			for {
				if _, err := w.Write(chunk); err != nil {
					done <- err
					return
				}
			}
		}()
		select {
		case <-partDone:
		case err := <-done:
			t.Fatalf("producer stopped before any part was stored: %v", err)
		}
		if err := w.Abort(context.Background()); err != nil {
			t.Fatal(err)
		}
		if werr := <-done; !errors.Is(werr, sperrors.Canceled) {
			t.Fatalf("producer's Write after Abort: want Canceled, got %v", werr)
		}
		if ids := s3test.IncompleteUploads(t, env.Srv, env.Bucket, ""); len(ids) != 0 {
			t.Fatalf("incomplete uploads left: %v", ids)
		}
		if n := budget.InUse(); n != 0 {
			t.Fatalf("%d bytes of buffers never returned to the budget", n)
		}
	})
}

// Errors are values: the error a Write returned is not changed by what Close learns later (the
// abort failing); Close returns its own copy that says so.
func TestReturnedErrorIsNotMutated(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"))
	fs := faulty.New(mem, faulty.Always(faulty.OpUploadPart, faulty.Forbidden()), faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden()))
	w, err := writer.New(context.Background(), fs, "b", "k", func(o *writer.Options) {
		o.Profile = "minio"
		o.PartSize = 5 << 20
		o.Concurrency = 1
		o.AbortTimeout = time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	var writeErr error
	for range 8 { // until the failed part surfaces through Write
		if _, writeErr = w.Write(make([]byte, 5<<20)); writeErr != nil {
			break
		}
	}
	var we *sperrors.Error
	if !errors.As(writeErr, &we) || we.Kind != sperrors.Permanent {
		t.Fatalf("Write: %v, want the part's Permanent error", writeErr)
	}
	before := *we
	closeErr := w.Close()
	var ce *sperrors.Error
	if !errors.As(closeErr, &ce) || !ce.AbortFailed || ce.UploadID == "" {
		t.Fatalf("Close: %v, want AbortFailed with the upload id", closeErr)
	}
	if *we != before {
		t.Errorf("the error Write returned changed after Close: %+v, was %+v", *we, before)
	}
}
