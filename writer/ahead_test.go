package writer_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// countingReaderAt counts the bytes read from it.
type countingReaderAt struct {
	r    *bytes.Reader
	read atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingReaderAt) Size() int64 { return c.r.Size() }

func (c *countingReaderAt) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// slowCreate holds every CreateMultipartUpload's answer until the source has been read as far
// as want bytes, or for 10 s (hashing is slow under -race), and records whether it got that far.
// Over memstore it first reports the request written, as a net/http transport does (overHTTP:
// the adapter's transport does); fail makes the create fail without reaching the store.
type slowCreate struct {
	store.Store
	src      *countingReaderAt
	want     int64
	overHTTP bool
	fail     bool
	reached  atomic.Bool
}

func (s *slowCreate) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if tr := httptrace.ContextClientTrace(ctx); !s.overHTTP && tr != nil && tr.WroteRequest != nil {
		tr.WroteRequest(httptrace.WroteRequestInfo{})
	}
	var out *store.CreateMultipartUploadOutput
	err := error(&store.ResponseError{StatusCode: 403, Code: "AccessDenied", Message: "refused"})
	if !s.fail {
		out, err = s.Store.CreateMultipartUpload(ctx, in)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if s.src.read.Load() >= s.want {
			s.reached.Store(true)
			break
		}
	}
	return out, err
}

// TestFirstPartsHashedWhileCreating: the parts of an io.ReaderAt source that go first are hashed
// while the CreateMultipartUpload is on the wire (from when its request is written), so they leave as soon as it answers; the object
// lands verified. A create that fails after that pass fails the write with its own error, and
// nothing reads the source once Upload has returned.
func TestFirstPartsHashedWhileCreating(t *testing.T) {
	data := randomBytes(t, 4*5*mib+123)
	opts := func(o *writer.Options) { o.PartSize, o.Concurrency, o.Retry = 5*mib, 3, fastPolicy() }
	t.Run("lands", func(t *testing.T) {
		mem := newMem(minioLike)
		src := &countingReaderAt{r: bytes.NewReader(data)}
		st := &slowCreate{Store: mem, src: src, want: 3 * 5 * mib}
		res, err := writer.Upload(context.Background(), st, unitBucket, "k", src, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !st.reached.Load() {
			t.Fatalf("the create answered before the first 3 parts were hashed (%d bytes read)", src.read.Load())
		}
		if got, ok := mem.Object(unitBucket, "k"); !ok || !bytes.Equal(got, data) || !res.VerifiedStrong {
			t.Fatalf("landed %v, verified %s: want the bytes written, proven", ok, res.Verified)
		}
	})
	t.Run("create fails", func(t *testing.T) {
		mem := newMem(minioLike)
		src := &countingReaderAt{r: bytes.NewReader(data)}
		st := &slowCreate{Store: mem, src: src, want: 5 * mib, fail: true}
		_, err := writer.Upload(context.Background(), st, unitBucket, "k", src, opts)
		if !errors.Is(err, sperrors.Permanent) {
			t.Fatalf("got %v, want the create's Permanent refusal", err)
		}
		read := src.read.Load()
		time.Sleep(20 * time.Millisecond)
		if after := src.read.Load(); after != read {
			t.Fatalf("the source was read after Upload returned: %d bytes, then %d", read, after)
		}
		if ups := mem.Uploads(unitBucket); len(ups) != 0 {
			t.Fatalf("incomplete uploads left: %+v", ups)
		}
	})
}
