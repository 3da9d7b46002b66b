package writer_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// resurrecting plays a store at which a part the dead writer had in flight lands just after the
// first abort and re-creates the upload (Versity's gateway does this): the abort's own check
// finds the upload gone, every later ListParts finds it again until it is aborted a second time.
type resurrecting struct {
	store.Store
	mu          sync.Mutex
	aborts      int
	confirmed   bool  // the first abort's own ListParts has run
	secondAbort error // what the second abort answers
	listedAgain int   // ListParts answers "still there" after the first abort was confirmed
}

func (r *resurrecting) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	r.mu.Lock()
	r.aborts++
	n := r.aborts
	r.mu.Unlock()
	if n == 2 && r.secondAbort != nil {
		return r.secondAbort
	}
	return r.Store.AbortMultipartUpload(ctx, in)
}

func (r *resurrecting) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborts == 1 {
		if r.confirmed {
			r.listedAgain++
			return &store.ListPartsOutput{}, nil
		}
		r.confirmed = true
	}
	return r.Store.ListParts(ctx, in)
}

func resurrectionSetup(t *testing.T) (*memstore.Store, *journal.Dir, journal.ID) {
	t.Helper()
	mem := memstore.New(memstore.WithBuckets("b"))
	out, err := mem.CreateMultipartUpload(context.Background(), &store.CreateMultipartUploadInput{Bucket: "b", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	j := newJournal(t)
	id := journal.ID{Endpoint: endpointID, Bucket: "b", Key: "k", UploadID: out.UploadID}
	if err := j.Begin(journal.Record{ID: id, PartSize: part, SourceSize: 3 * part}); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(id); err != nil {
		t.Fatal(err)
	}
	return mem, j, id
}

// Recover looks again after its aborts and aborts an upload the store re-created; the record is
// dropped only once the upload is gone.
func TestRecoverAbortsAReCreatedUpload(t *testing.T) {
	mem, j, _ := resurrectionSetup(t)
	st := &resurrecting{Store: mem}
	rep, err := writer.Recover(context.Background(), st, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: 10 * time.Millisecond})
	if err != nil || rep.Counts[writer.RecoverAborted] != 1 || len(rep.Uploads) != 1 {
		t.Fatalf("recover = %+v, %v", rep, err)
	}
	if st.aborts != 2 || st.listedAgain == 0 {
		t.Fatalf("aborts sent = %d (listed again %d times), want a second abort after the second look", st.aborts, st.listedAgain)
	}
	if recs, _, _ := j.List(); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
}

// When the second abort fails, the record stays for the next recovery and the outcome says so.
func TestRecoverKeepsTheRecordWhenTheSecondAbortFails(t *testing.T) {
	mem, j, id := resurrectionSetup(t)
	st := &resurrecting{Store: mem, secondAbort: &store.ResponseError{Op: "AbortMultipartUpload", StatusCode: 403, Code: "AccessDenied"}}
	rep, err := writer.Recover(context.Background(), st, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: time.Millisecond})
	if err != nil || rep.Counts[writer.RecoverFailed] != 1 || rep.Uploads[0].Err == nil {
		t.Fatalf("recover = %+v, %v", rep, err)
	}
	if recs, _, _ := j.List(); len(recs) != 1 || recs[0].ID != id {
		t.Fatalf("records left: %+v, want the one whose upload is still there", recs)
	}
}

// A negative Settle skips the second look (one abort, as before).
func TestRecoverWithoutSecondLook(t *testing.T) {
	mem, j, _ := resurrectionSetup(t)
	st := &resurrecting{Store: mem}
	rep, err := writer.Recover(context.Background(), st, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1})
	if err != nil || rep.Counts[writer.RecoverAborted] != 1 || st.aborts != 1 {
		t.Fatalf("recover = %+v, %v; aborts %d", rep, err, st.aborts)
	}
}

// A record whose part size only its writer's profile allowed (1 MiB parts, under 5 MiB the
// default profile asks) is settled like any other: Recover aborts the upload and drops the record.
func TestRecoverSettlesARecordOfSmallParts(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20}))
	crashing := faulty.New(mem, faulty.Rule{Op: faulty.OpUploadPart, Part: 3, Fault: faulty.Forbidden()},
		faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden()))
	j := newJournal(t)
	_, err := writer.Upload(context.Background(), crashing, "b", "k", bytes.NewReader(make([]byte, 4<<20)),
		func(o *writer.Options) {
			o.Profile = "min=1MiB"
			o.PartSize = 1 << 20
			o.Concurrency = 1
			o.Retry = fastPolicy()
			o.JournalDir, o.JournalEndpoint = j.Path(), endpointID
		})
	if err == nil || len(mem.Uploads("b")) != 1 {
		t.Fatalf("the crash: err %v, %d uploads; want a failure leaving one upload", err, len(mem.Uploads("b")))
	}
	recoverAbortsTheOne(t, mem, j)
}

// recoverAbortsTheOne runs Recover at mem and wants exactly one upload aborted, no incomplete
// upload and no record left.
func recoverAbortsTheOne(t *testing.T, mem *memstore.Store, j *journal.Dir) {
	t.Helper()
	rep, err := writer.Recover(context.Background(), mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1})
	if err != nil || rep.Counts[writer.RecoverAborted] != 1 {
		t.Fatalf("recover = %+v, %v; want the upload aborted", rep, err)
	}
	if ups := mem.Uploads("b"); len(ups) != 0 {
		t.Fatalf("incomplete uploads after Recover: %v", ups)
	}
	if recs, _, _ := j.List(); len(recs) != 0 {
		t.Fatalf("records after Recover: %+v", recs)
	}
}

// Upload from a ReaderAt whose part fails for good and whose abort is refused names the upload
// it left (AbortFailed and UploadID), as the streaming Writer's Close does.
func TestUploadNamesTheUploadItCouldNotAbort(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20}))
	fs := faulty.New(mem, faulty.Rule{Op: faulty.OpUploadPart, Part: 1, Fault: faulty.Forbidden()},
		faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden()))
	// One part in flight: the failure is seen while parts are still being dispatched.
	_, err := writer.Upload(context.Background(), fs, "b", "k", bytes.NewReader(make([]byte, 8<<20)),
		func(o *writer.Options) {
			o.Profile = "min=1MiB"
			o.PartSize = 1 << 20
			o.Concurrency = 1
			o.Retry = fastPolicy()
		})
	ups := mem.Uploads("b")
	var se *sperrors.Error
	if !errors.As(err, &se) || len(ups) != 1 || !se.AbortFailed || se.UploadID != ups[0].UploadID {
		t.Fatalf("err %v (AbortFailed %v), uploads left %v: want the left upload named", err, se != nil && se.AbortFailed, ups)
	}
}

// Upload retries a whole upload that failed verification; the caller hears only of the last
// attempt, so it must still name an upload an earlier attempt could not abort (and an unproven
// object it left at the key): in the error when the retries fail too, in Result.LeftBehind when
// one lands. Here the store ignores checksum headers and damages part 2, its abort is refused once.
func TestUploadNamesWhatEarlierAttemptsLeft(t *testing.T) {
	data := make([]byte, 3<<20+7)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	opts := []func(*writer.Options){func(o *writer.Options) {
		o.Profile = "min=1MiB"
		o.PartSize = 1 << 20
		o.Concurrency = 1
		o.Retry = fastPolicy()
	}}
	newMem := func() *memstore.Store {
		return memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20, IgnoreChecksumHeaders: true}))
	}
	t.Run("every attempt fails", func(t *testing.T) {
		mem := newMem()
		fs := faulty.New(mem, faulty.Rule{Op: faulty.OpUploadPart, Part: 2, Fault: faulty.FlipByte()}, faulty.Nth(faulty.OpAbortMultipart, 1, faulty.Forbidden()))
		_, err := writer.Upload(context.Background(), fs, "b", "k", bytes.NewReader(data), opts...)
		ups := mem.Uploads("b")
		var se *sperrors.Error
		if !errors.As(err, &se) || se.Kind != sperrors.Integrity || len(ups) != 1 || !se.AbortFailed || se.UploadID != ups[0].UploadID {
			t.Fatalf("err %v, uploads left %v: want Integrity naming the first attempt's upload", err, ups)
		}
	})
	t.Run("a later attempt lands", func(t *testing.T) {
		mem := newMem()
		// Part 2 damaged when first sent and when re-sent (calls 2 and 5): the first attempt fails.
		fs := faulty.New(mem, faulty.Nth(faulty.OpUploadPart, 2, faulty.FlipByte()), faulty.Nth(faulty.OpUploadPart, 5, faulty.FlipByte()),
			faulty.Nth(faulty.OpAbortMultipart, 1, faulty.Forbidden()))
		res, err := writer.Upload(context.Background(), fs, "b", "k", bytes.NewReader(data), opts...)
		if err != nil {
			t.Fatal(err)
		}
		ups := mem.Uploads("b")
		if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) || res.UploadAttempts != 2 || len(ups) != 1 ||
			len(res.LeftBehind) != 1 || res.LeftBehind[0] != ups[0].UploadID || len(res.Notes) == 0 {
			t.Fatalf("attempts %d, LeftBehind %v, notes %q, uploads left %v: want the source landed and the first attempt's upload named",
				res.UploadAttempts, res.LeftBehind, res.Notes, ups)
		}
	})
	t.Run("a later attempt resumes it", func(t *testing.T) {
		// With a journal the second attempt resumes the upload the first could not abort and
		// lands it: nothing is left, so nothing may be named.
		mem := newMem()
		j := newJournal(t)
		fs := faulty.New(mem, faulty.Nth(faulty.OpUploadPart, 2, faulty.FlipByte()), faulty.Nth(faulty.OpUploadPart, 5, faulty.FlipByte()),
			faulty.Nth(faulty.OpAbortMultipart, 1, faulty.Forbidden()))
		res, err := writer.Upload(context.Background(), fs, "b", "k", bytes.NewReader(data), append(opts, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })...)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) || res.UploadAttempts != 2 || res.ResumedParts == 0 ||
			len(mem.Uploads("b")) != 0 || len(res.LeftBehind) != 0 || res.MaybeLeftBehind {
			t.Fatalf("attempts %d, resumed %d, LeftBehind %v, uploads left %v: want the first attempt's upload resumed and landed, none named",
				res.UploadAttempts, res.ResumedParts, res.LeftBehind, mem.Uploads("b"))
		}
	})
}

// A create whose answer was lost may have left an upload no id names. When the look for it is
// refused, the write that landed says so (MaybeLeftBehind, a note), and with a journal the
// create's placeholder stays on disk, so Recover finds and aborts that upload; without it, a
// crash or a refused sweep forgot it for good.
func TestALostCreateIsNeverForgotten(t *testing.T) {
	data := make([]byte, 3<<20+5)
	for _, journaled := range []bool{false, true} {
		mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20}))
		fs := faulty.New(mem, faulty.Nth(faulty.OpCreateMultipartUpload, 1, faulty.DropResponse()),
			faulty.Always(faulty.OpListMultipartUploads, faulty.Forbidden()))
		opts := []func(*writer.Options){func(o *writer.Options) { o.Profile = "min=1MiB"; o.PartSize = 1 << 20; o.Retry = fastPolicy() }}
		j := newJournal(t)
		if journaled {
			opts = append(opts, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })
		}
		res, err := writer.Upload(context.Background(), fs, "b", "k", bytes.NewReader(data), opts...)
		if err != nil {
			t.Fatalf("journal %v: %v", journaled, err)
		}
		if !res.MaybeLeftBehind || len(res.Notes) == 0 || len(mem.Uploads("b")) != 1 {
			t.Fatalf("journal %v: MaybeLeftBehind %v, notes %q, %d uploads left; want the lost create's upload reported",
				journaled, res.MaybeLeftBehind, res.Notes, len(mem.Uploads("b")))
		}
		if !journaled {
			continue
		}
		recoverAbortsTheOne(t, mem, j)
		if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) {
			t.Fatalf("Recover changed the object: %d bytes", len(got))
		}
	}
}

// A placeholder whose candidate upload Recover cannot inspect (ListParts refused) is kept and
// reported failed, not dropped as if nothing were there: the next Recover aborts that upload.
func TestRecoverKeepsAPlaceholderItCouldNotFollow(t *testing.T) {
	mem, j := journaledLostCreate(t)
	refused := faulty.New(mem, faulty.Always(faulty.OpListParts, faulty.Forbidden()))
	rep, err := writer.Recover(context.Background(), refused, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1, Policy: fastPolicy()})
	if err != nil || rep.Counts[writer.RecoverFailed] != 1 {
		t.Fatalf("recover with ListParts refused = %+v, %v; want the placeholder failed and kept", rep, err)
	}
	if recs, _, _ := j.List(); len(recs) != 1 || len(mem.Uploads("b")) != 1 {
		t.Fatalf("after the failed Recover: records %+v, uploads %v; want both kept", recs, mem.Uploads("b"))
	}
	rep, err = writer.Recover(context.Background(), mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1})
	if err != nil || rep.Counts[writer.RecoverAborted] != 1 || len(mem.Uploads("b")) != 0 {
		t.Fatalf("recover = %+v, %v, uploads %v; want the upload aborted", rep, err, mem.Uploads("b"))
	}
}

// A crashed write whose Complete landed a part damaged on the way (no checksum to catch it, the
// check never ran) left its own corrupt object at the key. The writer no longer commits such a
// part when another part's ETag shows the store's ETags are MD5s, but a record an older safeput
// left can still say so. Recover does not call that "gone": it reports it failed, Integrity with
// ObjectLeft, keeps the record, and leaves the object alone; a re-run of the write replaces it
// and settles the record.
func TestRecoverReportsADamagedCommit(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20, IgnoreChecksumHeaders: true}))
	j := newJournal(t)
	data := make([]byte, 3<<20+7)
	for i := range data {
		data[i] = byte(i * 5)
	}
	damagedCommit(t, mem, j, "k", data, 2)
	damaged, ok := mem.Object("b", "k")
	if !ok || bytes.Equal(damaged, data) {
		t.Fatalf("no damaged object at the key (stored %v): the test tests nothing", ok)
	}
	recoverReportsDamaged(t, mem, j)
	if got, _ := mem.Object("b", "k"); !bytes.Equal(got, damaged) {
		t.Fatal("Recover touched the object")
	}
	opts := []func(*writer.Options){func(o *writer.Options) {
		o.Profile = "min=1MiB"
		o.PartSize = 1 << 20
		o.Concurrency = 1
		o.Retry = fastPolicy()
		o.JournalDir, o.JournalEndpoint = j.Path(), endpointID
	}}
	if _, err := writer.Upload(context.Background(), mem, "b", "k", bytes.NewReader(data), opts...); err != nil {
		t.Fatalf("the re-run: %v", err)
	}
	if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) {
		t.Fatal("the re-run did not land the source")
	}
	if recs, _, _ := j.List(); len(recs) != 0 {
		t.Fatalf("records after the re-run: %+v", recs)
	}
}

// A re-run after a crash does not reuse a journaled part the store got damaged (on a store that
// checks no checksum, its ETag is not its MD5 while another part's is): it sends that part again
// and the one upload lands.
func TestResumeSendsADamagedPartAgain(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20, IgnoreChecksumHeaders: true}))
	j := newJournal(t)
	data := make([]byte, 3<<20+7)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	opts := []func(*writer.Options){func(o *writer.Options) {
		o.Profile = "min=1MiB"
		o.PartSize = 1 << 20
		o.Concurrency = 1
		o.Retry = fastPolicy()
		o.JournalDir, o.JournalEndpoint = j.Path(), endpointID
	}}
	crashing := faulty.New(mem, faulty.Rule{Op: faulty.OpUploadPart, Part: 2, Fault: faulty.FlipByte()},
		faulty.Rule{Op: faulty.OpUploadPart, Part: 4, Fault: faulty.Forbidden()}, faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden()))
	if _, err := writer.Upload(context.Background(), crashing, "b", "k", bytes.NewReader(data), opts...); err == nil {
		t.Fatal("the crashing write succeeded")
	}
	if recs, _, _ := j.List(); len(recs) != 1 || len(recs[0].Parts) != 3 {
		t.Fatalf("journal after the crash: %+v; want one record of parts 1-3", recs)
	}
	res, err := writer.Upload(context.Background(), mem, "b", "k", bytes.NewReader(data), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) {
		t.Fatal("the re-run did not land the source")
	}
	if res.ResumedParts != 2 || res.UploadAttempts != 1 || res.BytesSent != 1<<20+7 {
		t.Fatalf("resumed %d parts, %d attempts, sent %d bytes; want parts 1 and 3 reused, 2 and 4 sent", res.ResumedParts, res.UploadAttempts, res.BytesSent)
	}
	if recs, _, _ := j.List(); len(recs) != 0 || len(mem.Uploads("b")) != 0 {
		t.Fatalf("after the re-run: records %+v, uploads %v", recs, mem.Uploads("b"))
	}
}

// When the HEAD cannot decide whether a crashed write's Complete landed its object, Recover
// reads the object back against the record's CRC: a commit whose every part was damaged (no
// ETag shows it) is reported, Integrity with ObjectLeft, not called gone; on a store whose HEAD
// shows nothing but the length, a landed commit is proven landed.
func TestRecoverReadsBackWhatTheHeadCannotProve(t *testing.T) {
	data := make([]byte, 3<<20+7)
	for i := range data {
		data[i] = byte(i*11 + i>>10)
	}
	t.Run("every part damaged", func(t *testing.T) {
		mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20, IgnoreChecksumHeaders: true}))
		j := newJournal(t)
		damagedCommit(t, mem, j, "k", data, 0)
		recoverReportsDamaged(t, mem, j)
	})
	t.Run("landed, only the length in the HEAD", func(t *testing.T) {
		mem, j := crashedLandingOpaque(t, data)
		rep, err := writer.Recover(context.Background(), mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1})
		if err != nil || rep.Counts[writer.RecoverLanded] != 1 || rep.Uploads[0].Note != "" {
			t.Fatalf("recover = %+v, %v; want landed, no note", rep, err)
		}
		if recs, _, _ := j.List(); len(recs) != 0 {
			t.Fatalf("records after Recover: %+v", recs)
		}
	})
	// Over the caller's read-back limit (or with read-back off) nothing proves the object either
	// way: the record is gone, and the report says what was not proven.
	for _, limit := range []int64{1 << 20, -1} {
		t.Run(fmt.Sprintf("not read back, limit %d", limit), func(t *testing.T) {
			mem, j := crashedLandingOpaque(t, data)
			reads := faulty.New(mem, faulty.Always(faulty.OpGetObject, faulty.Forbidden())) // counts read-backs
			rep, err := writer.Recover(context.Background(), reads, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1, ReadBackLimit: limit})
			if err != nil || rep.Counts[writer.RecoverGone] != 1 {
				t.Fatalf("recover = %+v, %v; want gone", rep, err)
			}
			if n := reads.Count(faulty.Forbidden()); n != 0 {
				t.Errorf("%d GetObject calls; the limit forbids reading the object back", n)
			}
			note := rep.Uploads[0].Note
			if !strings.Contains(note, "cannot prove or disprove") || !strings.Contains(note, "not read back") {
				t.Errorf("note %q; want it to say the object was not proven and not read back (%+v)", note, rep.Uploads)
			}
		})
	}
}

// crashedLandingOpaque leaves what a journaled write killed after its Complete landed leaves on
// a store whose HEAD gives only the length: the intended object at the key, its record.
func crashedLandingOpaque(t *testing.T, data []byte) (*memstore.Store, *journal.Dir) {
	t.Helper()
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20, IgnoreChecksumHeaders: true, OpaqueETags: true}))
	j := newJournal(t)
	crashing := faulty.New(mem, faulty.Nth(faulty.OpCompleteMultipart, 1, faulty.DropResponse()),
		faulty.Always(faulty.OpHeadObject, faulty.Forbidden()), faulty.Always(faulty.OpGetObject, faulty.Forbidden()))
	if _, err := writer.Upload(context.Background(), crashing, "b", "k", bytes.NewReader(data), func(o *writer.Options) {
		o.Profile = "min=1MiB"
		o.PartSize = 1 << 20
		o.Retry = fastPolicy()
		o.JournalDir, o.JournalEndpoint = j.Path(), endpointID
	}); err == nil {
		t.Fatal("the crashing write succeeded")
	}
	if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) {
		t.Fatal("the crashing write did not land its object: the test tests nothing")
	}
	return mem, j
}

// recoverReportsDamaged runs Recover over the journal's one record of a damaged commit: it must
// report it failed, Integrity with ObjectLeft, and keep the record.
func recoverReportsDamaged(t *testing.T, mem *memstore.Store, j *journal.Dir) {
	t.Helper()
	rep, err := writer.Recover(context.Background(), mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1})
	var se *sperrors.Error
	if err != nil || rep.Counts[writer.RecoverFailed] != 1 || !errors.As(rep.Uploads[0].Err, &se) || se.Kind != sperrors.Integrity || !se.ObjectLeft {
		t.Fatalf("recover = %+v, %v; want the record failed: Integrity, ObjectLeft", rep, err)
	}
	if recs, _, _ := j.List(); len(recs) != 1 {
		t.Fatalf("records after Recover: %+v; want the damaged commit's kept", recs)
	}
}

// damagedCommit leaves what a writer that crashed right after committing a part damaged on the
// way leaves: the object its 1 MiB parts assembled (part bad, or every part when bad is 0, with
// one byte flipped) at the key,
// and a journal record of the parts as sent (their MD5s, the store's ETags) and of the object
// intended.
func damagedCommit(t *testing.T, st store.Store, j *journal.Dir, key string, data []byte, bad int32) {
	t.Helper()
	ctx := context.Background()
	up, err := st.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "b", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	id := journal.ID{Endpoint: endpointID, Bucket: "b", Key: key, UploadID: up.UploadID}
	rec := journal.Record{ID: id, PartSize: 1 << 20, SourceSize: int64(len(data)), ChecksumAlgorithm: string(store.ChecksumCRC32C)}
	full, err := integrity.Sum(store.ChecksumCRC32C, data)
	if err != nil {
		t.Fatal(err)
	}
	var completed []store.CompletedPart
	var md5s [][16]byte
	for n, off := int32(1), 0; off < len(data); n, off = n+1, off+1<<20 {
		body := bytes.Clone(data[off:min(off+1<<20, len(data))])
		sum := md5.Sum(body)
		md5s = append(md5s, sum)
		crc, err := integrity.Sum(store.ChecksumCRC32C, body)
		if err != nil {
			t.Fatal(err)
		}
		if n == bad || bad == 0 {
			body[len(body)/2] ^= 0xff
		}
		out, err := st.UploadPart(ctx, &store.UploadPartInput{Bucket: "b", Key: key, UploadID: up.UploadID, PartNumber: n, Body: bytes.NewReader(body), ContentLength: int64(len(body))})
		if err != nil {
			t.Fatal(err)
		}
		completed = append(completed, store.CompletedPart{PartNumber: n, ETag: out.ETag})
		rec.Parts = append(rec.Parts, journal.Part{Number: n, Size: int64(len(body)), Checksum: crc, MD5: hex.EncodeToString(sum[:]), ETag: out.ETag})
	}
	rec.Object = &journal.Object{Size: int64(len(data)), ETag: integrity.MultipartETag(md5s), ChecksumAlgorithm: string(store.ChecksumCRC32C), Checksum: full}
	if err := j.Begin(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: "b", Key: key, UploadID: up.UploadID, Parts: completed}); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(id); err != nil {
		t.Fatal(err)
	}
}

// Recover calls a commit damaged only when the record proves it: one part's store ETag is its MD5
// (the store's ETags are content MD5s), another's is not. ETags that are never MD5s (SSE-KMS)
// prove nothing, so a correct object there is never reported damaged.
func TestRecoverCallsDamagedOnlyWhatTheRecordProves(t *testing.T) {
	const a, b = "0cc175b9c0f1b6a831c399e269772661", "92eb5ffee6ae2fec3ad71c777531578f"
	for _, c := range []struct {
		name  string
		parts []journal.Part
		want  bool
	}{
		{"every ETag its MD5", []journal.Part{{Number: 1, ETag: a, MD5: a}, {Number: 2, ETag: `"` + b + `"`, MD5: b}}, false},
		{"one part damaged", []journal.Part{{Number: 1, ETag: a, MD5: a}, {Number: 2, ETag: a, MD5: b}}, true},
		{"no ETag is an MD5 (SSE-KMS)", []journal.Part{{Number: 1, ETag: b, MD5: a}, {Number: 2, ETag: a, MD5: b}}, false},
		{"no MD5 recorded", []journal.Part{{Number: 1, ETag: a}, {Number: 2, ETag: b}}, false},
	} {
		if got := writer.PartsShowDamage(journal.Record{Parts: c.parts}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// On a store that lacks the listings Recover needs (405/501), it keeps the records and says the
// store cannot list, rather than reporting the uploads gone.
func TestRecoverSaysTheStoreCannotList(t *testing.T) {
	mem, j := journaledLostCreate(t)
	unlisted := faulty.New(mem, faulty.Always(faulty.OpListMultipartUploads, faulty.Response(501, "NotImplemented", "not implemented")))
	rep, err := writer.Recover(context.Background(), unlisted, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1, Policy: fastPolicy()})
	if err != nil || rep.Counts[writer.RecoverFailed] != 1 || len(rep.Uploads) != 1 ||
		!strings.Contains(fmt.Sprint(rep.Uploads[0].Err), "the store cannot list incomplete uploads (ListMultipartUploads answered HTTP 501 NotImplemented)") {
		t.Fatalf("recover without ListMultipartUploads = %+v, %v; want the placeholder kept, saying the store cannot list", rep, err)
	}
	if recs, _, _ := j.List(); len(recs) != 1 {
		t.Fatalf("records %+v: want the placeholder kept", recs)
	}

	mem2, j2, id := resurrectionSetup(t)
	noParts := faulty.New(mem2, faulty.Always(faulty.OpListParts, faulty.Response(405, "MethodNotAllowed", "not allowed")))
	rep, err = writer.Recover(context.Background(), noParts, j2.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1, Policy: fastPolicy()})
	if err != nil || rep.Counts[writer.RecoverFailed] != 1 || len(rep.Uploads) != 1 ||
		!strings.Contains(fmt.Sprint(rep.Uploads[0].Err), "does not support ListParts (HTTP 405 MethodNotAllowed): whether upload "+id.UploadID+" is still open cannot be told") {
		t.Fatalf("recover without ListParts = %+v, %v; want the record kept, saying why", rep, err)
	}
}

// journaledLostCreate lands b/k (3 MiB in 1 MiB parts) in a memstore after the first
// CreateMultipartUpload's answer was lost and the sweep for it was refused, so the journal keeps
// a placeholder for an upload Recover has to find.
func journaledLostCreate(t *testing.T) (*memstore.Store, *journal.Dir) {
	t.Helper()
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20}))
	lost := faulty.New(mem, faulty.Nth(faulty.OpCreateMultipartUpload, 1, faulty.DropResponse()),
		faulty.Always(faulty.OpListMultipartUploads, faulty.Forbidden()))
	j := newJournal(t)
	if _, err := writer.Upload(context.Background(), lost, "b", "k", bytes.NewReader(make([]byte, 3<<20)),
		func(o *writer.Options) {
			o.Profile = "min=1MiB"
			o.PartSize = 1 << 20
			o.Retry = fastPolicy()
			o.JournalDir, o.JournalEndpoint = j.Path(), endpointID
		}); err != nil {
		t.Fatal(err)
	}
	return mem, j
}
