package writer_test

import (
	"bytes"
	"context"
	stderrors "errors"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// The faults, operations and store quirks FuzzUpload draws from.
var (
	fuzzFaults = []faulty.Fault{
		faulty.SlowDown(), faulty.InternalError(), faulty.ChecksumMismatch(), faulty.ResetMidBody(),
		faulty.DropResponse(), faulty.Truncate(), faulty.FlipByte(), faulty.Forbidden(),
		faulty.EntityTooSmall(), faulty.NoSuchUploadAfterCommit(), faulty.Hang(),
	}
	fuzzOps = []string{
		faulty.OpPutObject, faulty.OpCreateMultipartUpload, faulty.OpUploadPart, faulty.OpCompleteMultipart,
		faulty.OpAbortMultipart, faulty.OpListParts, faulty.OpListMultipartUploads, faulty.OpHeadObject, faulty.OpGetObject, faulty.OpDeleteObject,
	}
	// Quirks under which the default (strict) profile can always prove a write: MD5 ETags stay.
	fuzzQuirks = []memstore.Rules{
		{}, {NoDefaultChecksum: true}, {IgnoreChecksumHeaders: true}, {EmptyCommitETag: true},
		{RejectChecksumHeaders: true, NoDefaultChecksum: true}, {ReplayComplete: true},
		{ListEveryAttempt: true}, {ListEveryAttempt: true, IgnoreChecksumHeaders: true},
	}
)

// FuzzUpload is the fault campaign on the in-memory store, fast enough to fuzz: one upload of a
// drawn size, part size, concurrency, source kind and store quirk, with up to three faults at
// drawn calls. Whatever the draw, the write lands exactly the source; or it fails with a kind one
// of its faults allows, leaving at the key nothing or exactly the source, or saying that an
// unproven object of its own is there (ObjectLeft); and an incomplete
// upload is left only when the result or the error names it. With a journal (drawn too),
// Recover on the healthy store then leaves no record and no incomplete upload, and the key as it
// was. Fuzz with
//
//	go test -run '^$' -fuzz FuzzUpload -fuzztime 5m ./writer/
func FuzzUpload(f *testing.F) {
	f.Add(uint32(3<<20+1), uint8(1), uint8(2), uint8(0), uint8(0), uint8(0), uint8(2), uint8(1), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), false)
	f.Add(uint32(100), uint8(1), uint8(1), uint8(1), uint8(1), uint8(4), uint8(0), uint8(1), uint8(7), uint8(8), uint8(1), uint8(0), uint8(0), uint8(0), true)
	f.Add(uint32(5<<20), uint8(2), uint8(4), uint8(2), uint8(2), uint8(5), uint8(3), uint8(1), uint8(9), uint8(4), uint8(1), uint8(0), uint8(0), uint8(0), false)
	f.Add(uint32(2<<20), uint8(1), uint8(3), uint8(0), uint8(3), uint8(10), uint8(2), uint8(2), uint8(4), uint8(5), uint8(1), uint8(0), uint8(0), uint8(0), true)
	f.Add(uint32(0), uint8(1), uint8(1), uint8(1), uint8(5), uint8(1), uint8(0), uint8(1), uint8(0), uint8(0), uint8(2), uint8(0), uint8(0), uint8(0), false)
	// A create-only PUT by If-None-Match whose body the store damaged, and the delete refused.
	f.Add(uint32(100), uint8(0), uint8(0x80), uint8(0), uint8(0), uint8(5), uint8(0), uint8(1), uint8(7), uint8(10), uint8(1), uint8(0), uint8(0), uint8(0), true)
	// Journaled: a part refused for good, the abort refused too; Recover must finish the job.
	f.Add(uint32(3<<20+5), uint8(0x80), uint8(2), uint8(0), uint8(0), uint8(7), uint8(2), uint8(2), uint8(7), uint8(4), uint8(1), uint8(0), uint8(0), uint8(0), false)
	// Journaled: the create's answer lost, then the sweep for the upload it left refused; the
	// journal must keep a trace of it for Recover.
	f.Add(uint32(3<<20+5), uint8(0x80), uint8(1), uint8(0), uint8(0), uint8(4), uint8(1), uint8(1), uint8(7), uint8(6), uint8(1), uint8(0), uint8(0), uint8(0), false)
	// Journaled, on a store that ignores checksum headers: a part damaged on the way, the
	// Complete's answer lost, the check refused. The record stays for Recover to report.
	f.Add(uint32(3<<20+5), uint8(0x80), uint8(0), uint8(0), uint8(2), uint8(6), uint8(2), uint8(1), uint8(4), uint8(3), uint8(1), uint8(7), uint8(7), uint8(1), false)
	// A store listing every attempt of a re-sent part: a part's answer lost, then the retry's
	// body kept damaged (checksums ignored), so the part is sent three times and listed thrice.
	f.Add(uint32(3<<20+5), uint8(0), uint8(0), uint8(0), uint8(7), uint8(4), uint8(2), uint8(2), uint8(6), uint8(2), uint8(3), uint8(0), uint8(0), uint8(0), false)
	f.Fuzz(func(t *testing.T, size uint32, partMiB, conc, srcKind, quirk, fault1, op1, nth1, fault2, op2, nth2, fault3, op3, nth3 uint8, createOnly bool) {
		size %= 6<<20 + 1
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*31 + int(size))
		}
		rules := fuzzQuirks[int(quirk)%len(fuzzQuirks)]
		rules.MinPartSize = 1 << 20
		mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(rules))
		var faults []faulty.Rule
		for _, d := range [][3]uint8{{fault1, op1, nth1}, {fault2, op2, nth2}, {fault3, op3, nth3}} {
			if d[2] > 0 { // nth 0: no fault
				faults = append(faults, faulty.Nth(fuzzOps[int(d[1])%len(fuzzOps)], int(d[2]%8), fuzzFaults[int(d[0])%len(fuzzFaults)]))
			}
		}
		fs := faulty.New(mem, faults...)
		policy := fastPolicy(func(o *retry.Options) { o.AttemptTimeout = 300 * time.Millisecond })
		profile := "min=1MiB"
		if conc&0x80 != 0 {
			profile += ",condput" // create-only by If-None-Match rather than a HEAD first
		}
		opts := []func(*writer.Options){
			func(o *writer.Options) {
				o.Profile = profile
				o.PartSize = int64(1+partMiB%3) << 20
				o.Concurrency = 1 + int(conc%4)
				o.Retry = policy
				o.CreateOnly = createOnly
			},
		}
		var j *journal.Dir
		if partMiB&0x80 != 0 {
			j = newJournal(t)
			opts = append(opts, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })
		}
		src := source(srcKind % 3)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		res, err := writer.Upload(ctx, fs, "b", "k", src.readerFor(t, data), opts...)
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("took %v: a hang", d)
		}
		injected := fs.Injected()
		named := map[string]bool{}
		got, stored := mem.Object("b", "k")
		if err == nil {
			if !stored || !bytes.Equal(got, data) || res.Size != int64(len(data)) {
				t.Fatalf("SILENT CORRUPTION: reported %d bytes landed, the key holds %d (stored %v), wrote %d; injected %v", res.Size, len(got), stored, len(data), injected)
			}
			for _, id := range res.LeftBehind {
				// A lost create's upload, or an earlier attempt's whose abort failed.
				if !injectedFault(injected, faulty.OpCreateMultipartUpload, faulty.DropResponse()) && !injectedOn(injected, faulty.OpAbortMultipart, faulty.OpListParts) {
					t.Errorf("left upload %s behind with no lost CreateMultipartUpload answer or failed abort; injected %v", id, injected)
				}
				named[id] = true
			}
		} else {
			var se *sperrors.Error
			if !stderrors.As(err, &se) {
				t.Fatalf("unclassified error %v; injected %v", err, injected)
			}
			if kind := sperrors.KindOf(err); !allowedKinds(injected)[kind] {
				t.Fatalf("failed as %s, which none of the injected faults %v allows: %v", kind, injected, err)
			}
			if stored && !bytes.Equal(got, data) && !se.ObjectLeft {
				// Allowed only when the error says an unproven object of this write is there.
				t.Fatalf("failed (%v) and left a wrong object of %d bytes at the key without saying so; injected %v", err, len(got), injected)
			}
			if se.ObjectLeft && !stored {
				t.Fatalf("the error says an object was left at the key, but the key is empty: %v", err)
			}
			if se.AbortFailed {
				if !injectedOn(injected, faulty.OpAbortMultipart, faulty.OpListParts) {
					t.Errorf("abort failed with no fault on the abort or its check: %v; injected %v", err, injected)
				}
				named[se.UploadID] = true
			}
		}
		if j != nil {
			// Whatever the faults left, Recover on the healthy store settles it: no record, no
			// incomplete upload, and the key as the write left it.
			rep, rerr := writer.Recover(ctx, mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1, Policy: fastPolicy()})
			if rerr != nil {
				t.Fatalf("Recover: %v", rerr)
			}
			// Only a damaged commit of this write keeps its record: reported, never called gone.
			for _, u := range rep.Uploads {
				var se *sperrors.Error
				damaged := stderrors.As(u.Err, &se) && se.Kind == sperrors.Integrity && se.ObjectLeft
				if u.Outcome == writer.RecoverFailed && !damaged {
					t.Fatalf("Recover failed record %s at the healthy store: %v; write err %v; injected %v", u.UploadID, u.Err, err, injected)
				}
			}
			if recs, problems, _ := j.List(); len(recs) != rep.Counts[writer.RecoverFailed] || len(problems) != 0 {
				t.Fatalf("after Recover the journal holds %d records, %d problems (report %+v)", len(recs), len(problems), rep)
			}
			if ups := mem.Uploads("b"); len(ups) != 0 {
				t.Fatalf("after Recover %d incomplete uploads remain (report %+v); write err %v; injected %v", len(ups), rep, err, injected)
			}
			if again, ok := mem.Object("b", "k"); ok != stored || !bytes.Equal(again, got) {
				t.Fatalf("Recover changed the object at the key (%d bytes, stored %v; was %d, %v)", len(again), ok, len(got), stored)
			}
		}
		for _, u := range mem.Uploads("b") {
			if named[u.UploadID] {
				continue
			}
			if lostCreateUnswept(injected) && saidMaybeLeft(res, err) {
				continue
			}
			t.Fatalf("incomplete upload %s left without a result or error naming it (err %v); injected %v", u.UploadID, err, injected)
		}
	})
}
