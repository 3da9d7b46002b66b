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

// How a journaled write of FuzzRecover ends; each leaves the journal what a crash there would.
var recoverCrashes = [][]faulty.Rule{
	// A part refused for good and the abort refused: a record with parts, its upload open.
	{faulty.Rule{Op: faulty.OpUploadPart, Part: 3, Fault: faulty.Forbidden()}, faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden())},
	// Complete refused and the abort refused: a record with the intended object, upload open.
	{faulty.Always(faulty.OpCompleteMultipart, faulty.Forbidden()), faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden())},
	// Complete landed, its answer lost, and the check refused: the object is there, the record
	// says what was intended.
	{faulty.Nth(faulty.OpCompleteMultipart, 1, faulty.DropResponse()), faulty.Always(faulty.OpHeadObject, faulty.Forbidden()),
		faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden())},
	// A create's answer lost, the sweep for its upload refused, then a part and the abort refused:
	// a placeholder beside the record of the upload the retry created.
	{faulty.Nth(faulty.OpCreateMultipartUpload, 1, faulty.DropResponse()), faulty.Always(faulty.OpListMultipartUploads, faulty.Forbidden()),
		faulty.Rule{Op: faulty.OpUploadPart, Part: 2, Fault: faulty.Forbidden()}, faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden())},
	// A create's answer lost and the sweep refused, the write landed: a placeholder alone.
	{faulty.Nth(faulty.OpCreateMultipartUpload, 1, faulty.DropResponse()), faulty.Always(faulty.OpListMultipartUploads, faulty.Forbidden())},
	// Every part damaged on the way (one alone is caught before Complete), the Complete's answer
	// lost, the check refused: the key holds the upload's own corrupt commit, which Recover must
	// leave alone.
	{faulty.Always(faulty.OpUploadPart, faulty.FlipByte()), faulty.Nth(faulty.OpCompleteMultipart, 1, faulty.DropResponse()),
		faulty.Always(faulty.OpHeadObject, faulty.Forbidden()), faulty.Always(faulty.OpGetObject, faulty.Forbidden())},
	// No crash: nothing journaled.
	nil,
}

// FuzzRecover runs Recover over what up to four crashed journaled writes of two keys left, at a
// store that faults at two drawn calls. Whatever the draw, Recover reports rather than fails,
// changes no object, and forgets no upload: every incomplete upload left is still traceable from
// the journal (a record names it, or a placeholder of its key stays). A second Recover at the
// healthy store then leaves no record and no incomplete upload. Fuzz with
//
//	go test -run '^$' -fuzz FuzzRecover -fuzztime 5m ./writer/
func FuzzRecover(f *testing.F) {
	f.Add(uint16(0x0123), uint8(3), uint8(7), uint8(5), uint8(1), uint8(0), uint8(0), uint8(0), false)
	f.Add(uint16(0x3210), uint8(4), uint8(7), uint8(5), uint8(2), uint8(1), uint8(0), uint8(1), true)
	f.Add(uint16(0x0033), uint8(2), uint8(7), uint8(6), uint8(1), uint8(7), uint8(4), uint8(1), false)
	f.Add(uint16(0x0212), uint8(3), uint8(1), uint8(7), uint8(1), uint8(10), uint8(5), uint8(2), true)
	f.Add(uint16(0x0041), uint8(2), uint8(4), uint8(4), uint8(1), uint8(7), uint8(8), uint8(1), false)
	// A damaged commit at k0, then a clean crash of k1 and a landed write over k0.
	f.Add(uint16(0x0615), uint8(0x82), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), false)
	f.Add(uint16(0x0005), uint8(0x80), uint8(7), uint8(7), uint8(1), uint8(0), uint8(0), uint8(0), true)
	// A placeholder whose empty upload Recover cannot inspect: ListParts refused.
	f.Add(uint16(0x0004), uint8(0), uint8(7), uint8(5), uint8(1), uint8(0), uint8(0), uint8(0), false)
	data := make([]byte, 3<<20+5)
	for i := range data {
		data[i] = byte(i*13 + i/509)
	}
	f.Fuzz(func(t *testing.T, crashes uint16, writes, fault1, op1, nth1, fault2, op2, nth2 uint8, dryRunFirst bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// writes&0x80: a store that ignores checksum headers (MD5 ETags only, as Ceph's RGW), where
		// a part damaged on the way gets past ListParts.
		mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20, IgnoreChecksumHeaders: writes&0x80 != 0}))
		j := newJournal(t)
		opts := []func(*writer.Options){
			func(o *writer.Options) {
				o.Profile = "min=1MiB"
				o.PartSize = 1 << 20
				o.Concurrency = 1
				o.Retry = fastPolicy()
				o.JournalDir, o.JournalEndpoint = j.Path(), endpointID
			},
		}
		for i := range 1 + int(writes%4) {
			crash := recoverCrashes[int(crashes>>(4*i)&0xf)%len(recoverCrashes)]
			key := "k" + string(rune('0'+i%2))
			_, _ = writer.Upload(ctx, faulty.New(mem, crash...), "b", key, bytes.NewReader(data[:len(data)-i]), opts...)
		}
		objects := map[string][]byte{}
		for _, key := range []string{"k0", "k1"} {
			if got, ok := mem.Object("b", key); ok {
				objects[key] = got
			}
		}
		traceable(t, "after the crashes", mem, j)

		var faults []faulty.Rule
		for _, d := range [][3]uint8{{fault1, op1, nth1}, {fault2, op2, nth2}} {
			if d[2] > 0 { // nth 0: no fault
				faults = append(faults, faulty.Nth(fuzzOps[int(d[1])%len(fuzzOps)], int(d[2]%8), fuzzFaults[int(d[0])%len(fuzzFaults)]))
			}
		}
		fs := faulty.New(mem, faults...)
		policy := fastPolicy(func(o *retry.Options) { o.AttemptTimeout = 300 * time.Millisecond })
		if dryRunFirst {
			if _, err := writer.Recover(ctx, fs, j.Path(), writer.RecoverOptions{Endpoint: endpointID, DryRun: true, Settle: -1, Policy: policy}); err != nil {
				t.Fatalf("dry-run Recover: %v", err)
			}
		}
		before, _, _ := j.List()
		start := time.Now()
		rep, err := writer.Recover(ctx, fs, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1, Policy: policy})
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("Recover took %v: a hang", d)
		}
		if err != nil {
			t.Fatalf("Recover: %v; injected %v", err, fs.Injected())
		}
		if len(rep.Uploads) != len(before) {
			t.Fatalf("Recover reported %d records of the %d in the journal", len(rep.Uploads), len(before))
		}
		after, _, _ := j.List()
		kept := map[journal.ID]bool{}
		for _, r := range after {
			kept[r.ID] = true
		}
		for _, u := range rep.Uploads {
			settled := u.Outcome == writer.RecoverLanded || u.Outcome == writer.RecoverAborted || u.Outcome == writer.RecoverGone
			id := journal.ID{Endpoint: u.Endpoint, Bucket: u.Bucket, Key: u.Key, UploadID: u.UploadID}
			if settled == kept[id] {
				t.Fatalf("record %s reported %s (err %v) but kept %v", u.UploadID, u.Outcome, u.Err, kept[id])
			}
		}
		sameObjects(t, "Recover at the faulty store", mem, objects)
		traceable(t, "after Recover at the faulty store (injected "+faultsText(fs)+")", mem, j)

		rep, err = writer.Recover(ctx, mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1})
		if err != nil {
			t.Fatalf("Recover at the healthy store: %v", err)
		}
		// Only a damaged commit at the key keeps its record: reported, never called gone.
		for _, u := range rep.Uploads {
			var se *sperrors.Error
			damaged := stderrors.As(u.Err, &se) && se.Kind == sperrors.Integrity && se.ObjectLeft
			if u.Outcome == writer.RecoverFailed && !damaged {
				t.Fatalf("record %s failed at the healthy store: %v", u.UploadID, u.Err)
			}
		}
		if recs, problems, _ := j.List(); len(recs) != rep.Counts[writer.RecoverFailed] || len(problems) != 0 {
			t.Fatalf("after Recover at the healthy store the journal holds %+v, problems %v (report %+v)", recs, problems, rep)
		}
		if ups := mem.Uploads("b"); len(ups) != 0 {
			t.Fatalf("after Recover at the healthy store %d incomplete uploads remain: %+v", len(ups), ups)
		}
		sameObjects(t, "Recover at the healthy store", mem, objects)
	})
}

// traceable fails unless every incomplete upload at the store can be found from the journal: a
// record names it, or a placeholder of its key stays (Recover follows it to the empty upload).
func traceable(t *testing.T, when string, mem *memstore.Store, j *journal.Dir) {
	t.Helper()
	recs, _, err := j.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range mem.Uploads("b") {
		found := false
		for _, r := range recs {
			found = found || r.UploadID == u.UploadID || (r.Creating && r.Key == u.Key)
		}
		if !found {
			t.Fatalf("%s: upload %s of %s is at the store and nothing in the journal leads to it (records %+v)", when, u.UploadID, u.Key, recs)
		}
	}
}

func sameObjects(t *testing.T, what string, mem *memstore.Store, objects map[string][]byte) {
	t.Helper()
	for _, key := range []string{"k0", "k1"} {
		got, ok := mem.Object("b", key)
		if want, had := objects[key]; ok != had || !bytes.Equal(got, want) {
			t.Fatalf("%s changed the object at %s (%d bytes, stored %v; was %d, %v)", what, key, len(got), ok, len(want), had)
		}
	}
}

func faultsText(fs *faulty.Store) string {
	var b bytes.Buffer
	for _, i := range fs.Injected() {
		b.WriteString(i.String())
		b.WriteByte(' ')
	}
	return b.String()
}
