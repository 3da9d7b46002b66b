package writer_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/writer"
)

// dropper plays an operator's sweep (or a lifecycle rule) that aborts the write's upload from
// the side: just before the write's request op (of part number part, 0: any) reaches the store,
// side aborts that request's upload, then the request goes on and meets the store's answer for
// a dropped upload. It drops at most limit uploads (0: every one); loseAnswer makes the dropping
// request itself end without an answer (a reset), so the write's retry is what meets the drop.
type dropper struct {
	store.Store
	side       func(ctx context.Context, in *store.AbortMultipartUploadInput) error
	op         string
	part       int32
	limit      int
	loseAnswer bool
	// silent: every part of a dropped upload ends without an answer, as when the store closes the
	// connection before the client reads its NoSuchUpload (Versity with the aws adapter).
	silent bool
	// inProgress: a Complete of a dropped upload is answered 500 "This multipart completion is
	// already in progress" every time, never NoSuchUpload (Ceph RGW).
	inProgress bool

	mu      sync.Mutex
	dropped map[string]bool // uploads already dropped
	creates int
	sideErr error
}

func (d *dropper) Unwrap() store.Store { return d.Store }

// drop aborts uploadID from the side when op is the one to hit, and reports whether it did.
func (d *dropper) drop(ctx context.Context, op, bucket, key, uploadID string, part int32) bool {
	if op != d.op || (d.part != 0 && part != d.part) {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dropped[uploadID] || (d.limit > 0 && len(d.dropped) >= d.limit) {
		return false
	}
	if d.dropped == nil {
		d.dropped = map[string]bool{}
	}
	d.dropped[uploadID] = true
	if err := d.side(context.WithoutCancel(ctx), &store.AbortMultipartUploadInput{Bucket: bucket, Key: key, UploadID: uploadID}); err != nil {
		d.sideErr = err
	}
	return true
}

// droppedCount is how many uploads were dropped; it fails the test when a side abort failed.
func (d *dropper) droppedCount(t *testing.T) int {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sideErr != nil {
		t.Fatalf("the side abort failed: %v", d.sideErr)
	}
	return len(d.dropped)
}

func (d *dropper) createCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.creates
}

var errAnswerLost = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

func (d *dropper) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if ctx.Value(writer.SaveProbe) != true { // the checksum probe's own upload is not the write's
		d.mu.Lock()
		d.creates++
		d.mu.Unlock()
	}
	return d.Store.CreateMultipartUpload(ctx, in)
}

func (d *dropper) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	d.mu.Lock()
	silenced := d.silent && d.dropped[in.UploadID]
	d.mu.Unlock()
	if silenced {
		return nil, errAnswerLost
	}
	if d.drop(ctx, faulty.OpUploadPart, in.Bucket, in.Key, in.UploadID, in.PartNumber) && d.loseAnswer {
		return nil, errAnswerLost
	}
	return d.Store.UploadPart(ctx, in)
}

func (d *dropper) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	if d.drop(ctx, faulty.OpListParts, in.Bucket, in.Key, in.UploadID, 0) && d.loseAnswer {
		return nil, errAnswerLost
	}
	return d.Store.ListParts(ctx, in)
}

func (d *dropper) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	if d.drop(ctx, faulty.OpCompleteMultipart, in.Bucket, in.Key, in.UploadID, 0) && d.loseAnswer {
		return nil, errAnswerLost
	}
	d.mu.Lock()
	inProgress := d.inProgress && d.dropped[in.UploadID]
	d.mu.Unlock()
	if inProgress {
		return nil, &store.ResponseError{Op: "CompleteMultipartUpload", StatusCode: 500, Code: "InternalError", Message: "This multipart completion is already in progress"}
	}
	return d.Store.CompleteMultipartUpload(ctx, in)
}

// vanishCases are the requests a dropped upload is met at: a part, the ListParts check before
// Complete (asked for: SaveRereads off), the Complete.
var vanishCases = []struct {
	name string
	op   string
	part int32
	opts func(*writer.Options)
}{
	{"UploadPart", faulty.OpUploadPart, 2, func(*writer.Options) {}},
	{"ListParts", faulty.OpListParts, 0, func(o *writer.Options) { o.Savings &^= writer.SaveRereads }},
	{"CompleteMultipartUpload", faulty.OpCompleteMultipart, 0, func(*writer.Options) {}},
}

// mustBeVanished checks a write's failure for an upload dropped from the side: Transient,
// UploadGone, the store's NoSuchUpload kept (Ceph RGW answers NoSuchKey), and a message that says the upload was aborted
// elsewhere; stream: the message also says a stream cannot go on.
func mustBeVanished(t *testing.T, err error, stream bool) *sperrors.Error {
	t.Helper()
	var e *sperrors.Error
	if !errors.As(err, &e) {
		t.Fatalf("err %v, want a classified error", err)
	}
	if e.Kind != sperrors.Transient || !e.UploadGone || (e.Code != "NoSuchUpload" && e.Code != "NoSuchKey") || e.ObjectLeft || e.AbortFailed {
		t.Fatalf("err %v: kind %s, upload gone %v, code %q, object left %v, abort failed %v; want transient, upload gone, NoSuchUpload, nothing left",
			err, e.Kind, e.UploadGone, e.Code, e.ObjectLeft, e.AbortFailed)
	}
	if !strings.Contains(e.Message, "aborted elsewhere") {
		t.Fatalf("message %q does not say the upload was aborted elsewhere", e.Message)
	}
	if got := strings.Contains(e.Message, "stream"); got != stream {
		t.Fatalf("message %q: says a stream cannot go on %v, want %v", e.Message, got, stream)
	}
	return e
}

// mustNoteVanished checks the Result of an Upload that landed in a new upload.
func mustNoteVanished(t *testing.T, res *writer.Result) {
	t.Helper()
	if res.UploadAttempts != 2 {
		t.Fatalf("upload attempts %d, want 2 (the dropped upload, then one new upload)", res.UploadAttempts)
	}
	for _, n := range res.Notes {
		if strings.Contains(n, "aborted elsewhere") && strings.Contains(n, "new multipart upload") {
			return
		}
	}
	t.Fatalf("notes %q do not say the upload was dropped and a new one landed", res.Notes)
}

// TestUploadVanished: an upload aborted from the side while the write sends it (NoSuchUpload to
// a part, to the ListParts check or to the Complete). From a source Upload can read again, one
// new upload sends it again and lands verified, and the Result says so; from a stream the write
// fails Transient, UploadGone, saying the upload was aborted elsewhere, and leaves nothing.
func TestUploadVanished(t *testing.T) {
	data := randomBytes(t, largeSize)
	opts := func(extra func(*writer.Options)) []func(*writer.Options) {
		return []func(*writer.Options){func(o *writer.Options) { o.PartSize = 5 * mib; o.Threshold = 5 * mib }, extra}
	}
	for _, c := range vanishCases {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(minioLike)
			d := &dropper{Store: mem, side: mem.AbortMultipartUpload, op: c.op, part: c.part}
			_, err := write(t, d, "k", data, c.opts)
			mustBeVanished(t, err, true)
			mustBeAbsent(t, mem, "k")
			if d.droppedCount(t) != 1 {
				t.Fatalf("%d uploads dropped, want 1", d.droppedCount(t))
			}

			mem = newMem(minioLike)
			d = &dropper{Store: mem, side: mem.AbortMultipartUpload, op: c.op, part: c.part, limit: 1}
			res, err := writer.Upload(context.Background(), d, unitBucket, "k", bytes.NewReader(data), opts(c.opts)...)
			mustLand(t, mem, "k", data, res, err, res.Verified)
			mustNoteVanished(t, res)
			if n, creates := d.droppedCount(t), d.createCount(); n != 1 || creates != 2 {
				t.Fatalf("%d uploads dropped, %d created; want 1 dropped and one new upload", n, creates)
			}
			if ups := mem.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("incomplete uploads left: %v", ups)
			}
		})
	}
	t.Run("parts of the dropped upload unanswered", func(t *testing.T) {
		// The part never hears NoSuchUpload; ListParts, asked once its retries are spent, does.
		mem := newMem(minioLike)
		d := &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpUploadPart, part: 2, silent: true}
		_, err := write(t, d, "k", data, func(o *writer.Options) {
			o.Retry = retry.New(func(o *retry.Options) { o.InitialInterval = time.Millisecond })
		})
		// Every part sent after the drop goes unanswered, so whichever part spends its retries
		// first (parts go side by side) is the one the error names.
		if e := mustBeVanished(t, err, true); e.Op != "UploadPart" || e.PartNumber < 1 || int64(e.PartNumber) > (largeSize+5*mib-1)/(5*mib) {
			t.Fatalf("err %v, want one of the upload's parts", err)
		}
		mustBeAbsent(t, mem, "k")

		mem = newMem(minioLike)
		d = &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpUploadPart, part: 2, silent: true, limit: 1}
		res, err := writer.Upload(context.Background(), d, unitBucket, "k", bytes.NewReader(data),
			opts(func(o *writer.Options) {
				o.Retry = retry.New(func(o *retry.Options) { o.InitialInterval = time.Millisecond })
			})...)
		mustLand(t, mem, "k", data, res, err, res.Verified)
		mustNoteVanished(t, res)
	})
	t.Run("every upload dropped", func(t *testing.T) {
		// A store that drops every upload fails the write after one new upload, not in a loop.
		mem := newMem(minioLike)
		d := &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpUploadPart, part: 2}
		_, err := writer.Upload(context.Background(), d, unitBucket, "k", bytes.NewReader(data), opts(func(*writer.Options) {})...)
		e := mustBeVanished(t, err, false)
		if !strings.Contains(e.Message, "dropped too") {
			t.Fatalf("message %q does not say the new upload was dropped too", e.Message)
		}
		if n, creates := d.droppedCount(t), d.createCount(); n != 2 || creates != 2 {
			t.Fatalf("%d uploads dropped, %d created; want 2 and 2", n, creates)
		}
		mustBeAbsent(t, mem, "k")
	})
	t.Run("a lost Complete answer, then the upload gone", func(t *testing.T) {
		// The first Complete is dropped with the upload and its answer lost; the retry finds the
		// upload gone and the HEAD finds nothing: judged on that evidence, the write did not land.
		mem := newMem(minioLike)
		d := &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpCompleteMultipart, loseAnswer: true}
		_, err := write(t, d, "k", data)
		e := mustBeVanished(t, err, true)
		if !strings.Contains(e.Message, "answer was lost") || !strings.Contains(e.Message, "did not land") {
			t.Fatalf("message %q does not say what the evidence showed", e.Message)
		}
		mustBeAbsent(t, mem, "k")

		mem = newMem(minioLike)
		d = &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpCompleteMultipart, loseAnswer: true, limit: 1}
		res, err := writer.Upload(context.Background(), d, unitBucket, "k", bytes.NewReader(data), opts(func(*writer.Options) {})...)
		mustLand(t, mem, "k", data, res, err, res.Verified)
		mustNoteVanished(t, res)
	})
	t.Run("Complete answered 500 for a dropped upload", func(t *testing.T) {
		// The store never says NoSuchUpload to the Complete; once its retries are spent, ListParts
		// does, and the HEAD finds nothing: the upload was dropped.
		fast := func(o *writer.Options) {
			o.Retry = retry.New(func(o *retry.Options) { o.InitialInterval = time.Millisecond })
		}
		mem := newMem(minioLike)
		d := &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpCompleteMultipart, inProgress: true}
		_, err := write(t, d, "k", data, fast)
		e := mustBeVanished(t, err, true)
		if !strings.Contains(e.Message, "ListParts then found the upload gone") {
			t.Fatalf("message %q does not say what the evidence showed", e.Message)
		}
		mustBeAbsent(t, mem, "k")

		mem = newMem(minioLike)
		d = &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpCompleteMultipart, inProgress: true, limit: 1}
		res, err := writer.Upload(context.Background(), d, unitBucket, "k", bytes.NewReader(data), opts(fast)...)
		mustLand(t, mem, "k", data, res, err, res.Verified)
		mustNoteVanished(t, res)
	})
	t.Run("an older object at the key", func(t *testing.T) {
		// The object the write replaces is no evidence of anything: the upload was dropped, and
		// the older object stays untouched by the failed stream, replaced by the new upload.
		mem := newMem(minioLike)
		old := randomBytes(t, smallSize)
		if _, err := write(t, mem, "k", old); err != nil {
			t.Fatal(err)
		}
		d := &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpCompleteMultipart}
		_, err := write(t, d, "k", data)
		e := mustBeVanished(t, err, true)
		if !strings.Contains(e.Message, "not the one written") {
			t.Fatalf("message %q does not say what the HEAD found", e.Message)
		}
		if got, _ := mem.Object(unitBucket, "k"); !bytes.Equal(got, old) {
			t.Fatal("the older object was touched by the failed write")
		}
		d = &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpCompleteMultipart, limit: 1}
		res, err := writer.Upload(context.Background(), d, unitBucket, "k", bytes.NewReader(data), opts(func(*writer.Options) {})...)
		mustLand(t, mem, "k", data, res, err, res.Verified)
		mustNoteVanished(t, res)

		// Create-only: the object there is another writer's, so the write fails Precondition.
		mem = newMem(minioLike)
		if _, err := write(t, mem, "k", old); err != nil {
			t.Fatal(err)
		}
		d = &dropper{Store: mem, side: mem.AbortMultipartUpload, op: faulty.OpCompleteMultipart}
		_, err = writer.Upload(context.Background(), d, unitBucket, "k", bytes.NewReader(data),
			opts(func(o *writer.Options) { o.CreateOnly = true; o.Savings &^= writer.SaveProbe })...)
		if !errors.Is(err, sperrors.Precondition) {
			t.Fatalf("create-only: err %v, want Precondition", err)
		}
		if got, _ := mem.Object(unitBucket, "k"); !bytes.Equal(got, old) {
			t.Fatal("create-only: the other writer's object was touched")
		}
	})
	t.Run("re-created without its checksum mode", func(t *testing.T) {
		// Versity's posix backend: a part in flight when the upload was aborted makes it again,
		// without the checksum mode it was created with, and the Complete is refused for that.
		recreated := faulty.Response(400, "InvalidRequest", "The upload was created using the null checksum mode. The complete request must use the same checksum mode.")
		mem := newMem(minioLike)
		_, err := write(t, faulty.New(mem, faulty.First(faulty.OpCompleteMultipart, 1, recreated)), "k", data)
		var e *sperrors.Error
		if !errors.As(err, &e) || e.Kind != sperrors.Transient || !e.UploadGone || !strings.Contains(e.Message, "aborted elsewhere") ||
			!strings.Contains(e.Message, "re-created") || e.Code != "InvalidRequest" {
			t.Fatalf("err %v, want Transient, UploadGone, saying the upload was aborted and re-created", err)
		}
		mustBeAbsent(t, mem, "k")

		mem = newMem(minioLike)
		res, err := writer.Upload(context.Background(), faulty.New(mem, faulty.First(faulty.OpCompleteMultipart, 1, recreated)), unitBucket, "k",
			bytes.NewReader(data), opts(func(*writer.Options) {})...)
		mustLand(t, mem, "k", data, res, err, res.Verified)
		mustNoteVanished(t, res)
	})
	t.Run("first Complete NoSuchUpload, the object ours", func(t *testing.T) {
		// A NoSuchUpload whose object is at the key (as a store that finished the upload says)
		// is a landing, judged by the HEAD: no new upload.
		mem := newMem(minioLike)
		st := faulty.New(mem, faulty.First(faulty.OpCompleteMultipart, 1, faulty.NoSuchUploadAfterCommit()))
		res, err := writer.Upload(context.Background(), st, unitBucket, "k", bytes.NewReader(data), opts(func(*writer.Options) {})...)
		mustLand(t, mem, "k", data, res, err, res.Verified)
		if res.UploadAttempts != 1 || !res.AlreadyExisted {
			t.Fatalf("upload attempts %d, already existed %v; want the first upload proven at the key", res.UploadAttempts, res.AlreadyExisted)
		}
	})
}
