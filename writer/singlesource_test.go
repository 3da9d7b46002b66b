package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/crc64nvme"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// An Upload of an io.ReaderAt within the single-PUT threshold sends its one PutObject from the
// source: what it allocates does not grow with the object (a copy of it in a buffer would be
// the object's size again).
func TestSmallReaderAtIsNotCopied(t *testing.T) {
	const size = 1 << 20
	body := s3test.RandomBytes(size)
	for _, echo := range []bool{false, true} {
		t.Run(fmt.Sprintf("echo=%v", echo), func(t *testing.T) {
			up, err := writer.NewUploader(&parrotStore{echo: echo})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			upload := func() {
				res, err := up.Upload(ctx, "b", "k", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if res.Size != size || res.Requests != 1 || !res.VerifiedStrong || res.Multipart {
					t.Fatalf("size %d, %d requests, verified %s, multipart %v: want %d bytes in one PutObject, verified strong",
						res.Size, res.Requests, res.Verified, res.Multipart, size)
				}
			}
			upload() // the Uploader's lazily built state, and the pools
			const writes = 8
			before := heapAllocs()
			for range writes {
				upload()
			}
			per := (heapAllocs() - before) / writes
			t.Logf("%d B allocated per Upload of a %d-byte bytes.Reader", per, size)
			bound := uint64(size / 8)
			if raceEnabled {
				bound = size / 2 // pooled chunks are dropped at random under the race detector
			}
			if per > bound {
				t.Errorf("%d B allocated per Upload of a %d-byte bytes.Reader, want ≤ %d: is the object copied into a buffer?", per, size, bound)
			}
		})
	}
}

// A body damaged on its way to the store (a byte flipped, the store answering as if it took
// the body) is caught: the damaged object is replaced by a clean send from the source, or,
// when every send is damaged, the write fails Integrity and nothing is left at the key.
func TestSmallReaderAtDamagedOnWire(t *testing.T) {
	data := s3test.RandomBytes(100 << 10)
	for _, every := range []bool{false, true} {
		t.Run(fmt.Sprintf("every=%v", every), func(t *testing.T) {
			mem := memstore.New(memstore.WithBuckets("b"))
			rule := faulty.First(faulty.OpPutObject, 1, faulty.FlipByte())
			if every {
				rule = faulty.Always(faulty.OpPutObject, faulty.FlipByte())
			}
			fs := faulty.New(mem, rule)
			res, err := writer.Upload(context.Background(), fs, "b", "k", bytes.NewReader(data), func(o *writer.Options) { o.Retry = fastPolicy() })
			if fs.Count(faulty.FlipByte()) == 0 {
				t.Fatal("no body was damaged")
			}
			got, stored := mem.Object("b", "k")
			if every {
				if !errors.Is(err, sperrors.Integrity) {
					t.Fatalf("every PUT damaged: err %v, want Integrity", err)
				}
				if stored {
					t.Fatal("a damaged object is left at the key")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !stored || !bytes.Equal(got, data) {
				t.Fatal("the object at the key is not the source's bytes")
			}
			if res.Failures[sperrors.Integrity] == 0 || !res.VerifiedStrong {
				t.Errorf("Failures %v, verified %s: want the damage counted and the object proven", res.Failures, res.Verified)
			}
		})
	}
}

// failingReaderAt holds data but fails (or comes up short) from its failAt-th ReadAt on.
type failingReaderAt struct {
	data   []byte
	failAt int
	short  bool // end early (io.EOF) instead of failing

	mu    sync.Mutex
	calls int
}

var errSourceBroke = errors.New("failingReaderAt: the disk went away")

func (f *failingReaderAt) Size() int64 { return int64(len(f.data)) }

func (f *failingReaderAt) Read([]byte) (int, error) {
	return 0, errors.New("failingReaderAt: read by offset only")
}

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	f.calls++
	failing := f.calls >= f.failAt
	f.mu.Unlock()
	if !failing {
		return bytes.NewReader(f.data).ReadAt(p, off)
	}
	if f.short {
		n, _ := bytes.NewReader(f.data[:len(f.data)/2]).ReadAt(p, off)
		return n, io.EOF
	}
	return 0, errSourceBroke
}

// A source whose ReadAt fails, or ends before its size, while it is hashed or while it is sent,
// fails the write with a classified error (Permanent when its hashing read saw it), and nothing
// is left at the key.
func TestSmallReaderAtSourceFails(t *testing.T) {
	const size = 100 << 10
	for _, c := range []struct {
		name      string
		failAt    int
		short     bool
		permanent bool // the read before the request saw it: a source error, not the request's
	}{
		{name: "fails-hashing", failAt: 1, permanent: true},
		{name: "short-hashing", failAt: 1, short: true, permanent: true},
		{name: "fails-sending", failAt: 2},
		{name: "short-sending", failAt: 2, short: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memstore.New(memstore.WithBuckets("b"))
			src := &failingReaderAt{data: s3test.RandomBytes(size), failAt: c.failAt, short: c.short}
			res, err := writer.Upload(context.Background(), mem, "b", "k", src, func(o *writer.Options) { o.Retry = fastPolicy() })
			if err == nil {
				t.Fatalf("a source that broke landed: %+v", res)
			}
			t.Logf("err: %v", err)
			var se *sperrors.Error
			if !errors.As(err, &se) || se.Kind == sperrors.Unknown || se.Kind == sperrors.Internal {
				t.Fatalf("err %v (%T): want a classified error", err, err)
			}
			if c.permanent && se.Kind != sperrors.Permanent {
				t.Errorf("err %v: kind %s, want Permanent", err, se.Kind)
			}
			if _, stored := mem.Object("b", "k"); stored {
				t.Error("an object is at the key")
			}
			if n := len(mem.Uploads("b")); n != 0 {
				t.Errorf("%d uploads left", n)
			}
		})
	}
}

// changingReaderAt gives one version of its bytes for its first whole read and another after:
// a file rewritten while it is uploaded.
type changingReaderAt struct {
	first, then []byte

	mu   sync.Mutex
	read int64
}

func (c *changingReaderAt) Size() int64 { return int64(len(c.first)) }

func (c *changingReaderAt) Read([]byte) (int, error) {
	return 0, errors.New("changingReaderAt: read by offset only")
}

func (c *changingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	data := c.first
	if c.read >= int64(len(c.first)) {
		data = c.then
	}
	n, err := bytes.NewReader(data).ReadAt(p, off)
	c.read += int64(n)
	c.mu.Unlock()
	return n, err
}

// A source that changes between the read that hashes it and the request's own read never
// leaves an object its Result does not describe: on a store that checks the checksum header and
// on one that ignores it, through each proof the write may take, the write fails or the object
// at the key is one version of the source and has the Result's checksum.
func TestSmallReaderAtChangedSource(t *testing.T) {
	const size = 100 << 10
	for _, c := range []struct {
		name  string
		rules memstore.Rules
		opts  func(*writer.Options)
	}{
		{name: "checks"},
		{name: "ignores", rules: memstore.Rules{IgnoreChecksumHeaders: true}},
		{name: "ignores-no-md5", rules: memstore.Rules{IgnoreChecksumHeaders: true}, opts: func(o *writer.Options) { o.NoChecksum = true }},
		// The HEAD decides, and the MD5 is left for it (lateETag): the source is read again.
		{name: "head-late-md5", rules: memstore.Rules{IgnoreChecksumHeaders: true, NoDefaultChecksum: true},
			opts: func(o *writer.Options) { o.Savings &^= writer.SaveRereads }},
		{name: "head-late-md5-checks", rules: memstore.Rules{NoDefaultChecksum: true},
			opts: func(o *writer.Options) { o.Savings &^= writer.SaveRereads }},
	} {
		for _, profile := range []string{"", "minio", "ceph"} {
			t.Run(c.name+"/"+profile, func(t *testing.T) {
				mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(c.rules))
				first := s3test.RandomBytes(size)
				then := bytes.Clone(first)
				then[size/2] ^= 0xff
				src := &changingReaderAt{first: first, then: then}
				res, err := writer.Upload(context.Background(), mem, "b", "k", src, func(o *writer.Options) {
					o.Retry = fastPolicy()
					o.Profile = profile
					if c.opts != nil {
						c.opts(o)
					}
				})
				got, stored := mem.Object("b", "k")
				t.Logf("%d bytes read; landed: %v; err: %v", src.read, err == nil, err)
				if err != nil {
					var se *sperrors.Error
					if !errors.As(err, &se) || se.Kind == sperrors.Unknown || se.Kind == sperrors.Internal {
						t.Fatalf("err %v: want a classified error", err)
					}
					if stored && !se.ObjectLeft {
						t.Fatalf("the write failed (%v) and left an object at the key without saying so", err)
					}
					return
				}
				t.Logf("verified %s by %s", res.Verified, res.VerifiedBy)
				if !stored || (!bytes.Equal(got, then) && !bytes.Equal(got, first)) {
					t.Fatalf("landed (verified %s), but the object at the key is neither version of the source", res.Verified)
				}
				if res.Checksum.Algorithm != store.ChecksumNone {
					if want := crcOf(res.Checksum.Algorithm, got); res.Checksum.Value != want {
						t.Fatalf("Result's %s %s is not the object's %s", res.Checksum.Algorithm, res.Checksum.Value, want)
					}
				}
			})
		}
	}
}

// crcOf is the base64 CRC of data by alg, as S3 sends it.
func crcOf(alg store.ChecksumAlgorithm, data []byte) string {
	switch alg {
	case store.ChecksumCRC32C:
		return integrity.EncodeCRC32(crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	case store.ChecksumCRC32:
		return integrity.EncodeCRC32(crc32.ChecksumIEEE(data))
	}
	return integrity.EncodeCRC64(crc64nvme.Checksum(data))
}

// latePutReader leaves a read of the PutObject's body under way when PutObject returns.
type latePutReader struct {
	store.Store
	lateRead
}

func (s *latePutReader) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	body, err := s.take(in.Body)
	if err != nil {
		return nil, err
	}
	in.Body = body
	return s.Store.PutObject(ctx, in)
}

// The single PUT of a caller's in-memory ReaderAt, as a section part, does not let Upload return
// while a returned request still reads the source, and no read of it starts afterwards.
func TestSmallReaderAtLateReadEndsBeforeUpload(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"))
	data := s3test.RandomBytes(100 << 10)
	src := &gatedSource{Reader: bytes.NewReader(data), entered: make(chan struct{}), open: make(chan struct{})}
	st := &latePutReader{Store: mem, lateRead: lateRead{src: src}}
	go func() {
		<-src.entered
		time.Sleep(time.Second) // longer than the rest of the upload takes
		close(src.open)
	}()
	res, err := writer.Upload(context.Background(), st, "b", "k", src, func(o *writer.Options) { o.Retry = fastPolicy() })
	if err != nil {
		t.Fatal(err)
	}
	if res.Multipart {
		t.Fatal("a small object went multipart")
	}
	if !src.lateDone.Load() {
		t.Error("Upload returned while a request still read the caller's source")
	}
	if _, err := st.body.Read(make([]byte, 1)); err == nil {
		t.Error("a read of the PUT's body after Upload returned succeeded")
	}
	if got, ok := mem.Object("b", "k"); !ok || !bytes.Equal(got, data) {
		t.Fatalf("stored object differs from what was written (found %v)", ok)
	}
}

// A small object from each kind of ReaderAt (in memory, a file, a section of a file past its
// start: sent by sendfile over plain HTTP) goes as one PutObject read from the source, through
// both adapters and over TLS, and reads back identical; empty and one-byte objects included.
func TestSmallReaderAtOnServers(t *testing.T) {
	for _, each := range []struct {
		name string
		run  func(*testing.T, func(*testing.T, testkit.Env))
	}{{"http", testkit.ForEach}, {"tls", testkit.ForEachTLS}} {
		t.Run(each.name, func(t *testing.T) { smallReaderAtOnServers(t, each.run) })
	}
}

func smallReaderAtOnServers(t *testing.T, each func(*testing.T, func(*testing.T, testkit.Env))) {
	each(t, func(t *testing.T, env testkit.Env) {
		for _, size := range []int{0, 1, 100 << 10, part} {
			data := s3test.RandomBytes(size)
			for _, c := range []struct {
				name string
				r    func(t *testing.T) io.Reader
			}{
				{"bytes", func(*testing.T) io.Reader { return bytes.NewReader(data) }},
				{"file", func(t *testing.T) io.Reader { return fileOf(t, data) }},
				{"file-section", func(t *testing.T) io.Reader {
					f := fileOf(t, append(s3test.RandomBytes(1000), data...))
					return io.NewSectionReader(f, 1000, int64(size))
				}},
			} {
				t.Run(fmt.Sprintf("%s/%d", c.name, size), func(t *testing.T) {
					key := fmt.Sprintf("single/%s/%d", c.name, size)
					res, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, c.r(t), testOpts(env)...)
					if err != nil {
						t.Fatal(err)
					}
					if res.Multipart || res.Size != int64(size) || !res.VerifiedStrong || res.UploadAttempts != 1 {
						t.Fatalf("multipart %v, size %d, verified %s, %d upload attempts: want %d bytes in one PutObject, verified strong",
							res.Multipart, res.Size, res.Verified, res.UploadAttempts, size)
					}
					if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
						t.Fatal("read back differs")
					}
				})
			}
		}
	})
}

// besideStore holds each PutObject's body until the source has been read twice over (the
// checksum's read and the MD5's), up to a bound: an MD5 taken before the request instead of
// beside it has already been read by then, and the PUT waits out the bound.
type besideStore struct {
	store.Store
	src     *countingReaderAt
	waited  atomic.Bool
	atPut   atomic.Int64 // the source's bytes read when the PUT went on
	timeout time.Duration
}

func (s *besideStore) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	deadline := time.Now().Add(s.timeout)
	for s.src.read.Load() < 2*in.ContentLength {
		if time.Now().After(deadline) {
			s.waited.Store(true)
			break
		}
		time.Sleep(time.Millisecond)
	}
	s.atPut.Store(s.src.read.Load())
	return s.Store.PutObject(ctx, in)
}

// On an endpoint not known to check checksums (a fresh Uploader, a store that ignores the header),
// whose answer proves the bytes only by its ETag against their MD5, the MD5 of a small ReaderAt's
// single PUT is taken beside the request, from the source read again, not before the request in
// the checksum's read: the request does not wait for the hashing. The object still lands proven
// by its answer, in one request.
func TestSmallReaderAtMD5BesideRequest(t *testing.T) {
	const size = 1 << 20
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{IgnoreChecksumHeaders: true}))
	data := s3test.RandomBytes(size)
	src := &countingReaderAt{r: bytes.NewReader(data)}
	st := &besideStore{Store: mem, src: src, timeout: 5 * time.Second}
	res, err := writer.Upload(context.Background(), st, "b", "k", src, func(o *writer.Options) {
		o.Retry = fastPolicy()
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.waited.Load() {
		t.Errorf("after %v the PutObject had read %d bytes of the %d-byte source (want it read twice over): the MD5 was not taken beside it", st.timeout, st.atPut.Load(), size)
	}
	if res.Multipart || res.Requests != 1 || !res.VerifiedStrong {
		t.Errorf("multipart %v, %d requests, verified %s: want one PutObject, verified strong", res.Multipart, res.Requests, res.Verified)
	}
	if got, ok := mem.Object("b", "k"); !ok || !bytes.Equal(got, data) {
		t.Fatalf("stored object differs from what was written (found %v)", ok)
	}
}
