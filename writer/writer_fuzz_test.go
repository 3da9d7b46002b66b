package writer_test

import (
	"bytes"
	"context"
	stderrors "errors"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// How FuzzWriter ends a write.
const (
	endClose  = iota // Close after the last Write
	endAbort         // Abort after the cut
	endCancel        // cancel the writer's context after the cut, then Close
)

// FuzzWriter drives the streaming Writer as flush code does: Writes of drawn sizes, then a
// Close, an Abort or a cancelled context at a drawn point, on a store of a drawn quirk, with up
// to two faults at drawn calls. Close
// lands exactly what was written or fails classified; Abort and cancellation leave nothing at the
// key and no incomplete upload, unless the error names it; every part buffer is back in the
// shared memory budget when the write ends; nothing hangs or panics. Fuzz with
//
//	go test -run '^$' -fuzz FuzzWriter -fuzztime 5m ./writer/
func FuzzWriter(f *testing.F) {
	f.Add(uint32(3<<20+7), uint16(4093), uint8(endClose), uint32(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0))
	f.Add(uint32(3<<20+7), uint16(65535), uint8(endAbort), uint32(2<<20), uint8(7), uint8(2), uint8(2), uint8(0), uint8(0), uint8(0), uint8(0))
	f.Add(uint32(5<<20), uint16(1), uint8(endCancel), uint32(1<<20+3), uint8(1), uint8(3), uint8(1), uint8(0), uint8(0), uint8(0), uint8(0))
	f.Add(uint32(100), uint16(7), uint8(endAbort), uint32(50), uint8(10), uint8(0), uint8(1), uint8(0), uint8(0), uint8(0), uint8(0))
	f.Add(uint32(2<<20), uint16(1000), uint8(endClose), uint32(0), uint8(4), uint8(5), uint8(1), uint8(0), uint8(0), uint8(0), uint8(0))
	// A part damaged on the way at a store that ignores checksum headers: caught before Complete.
	f.Add(uint32(3<<20+7), uint16(4093), uint8(endClose), uint32(0), uint8(6), uint8(2), uint8(2), uint8(2), uint8(0), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, size uint32, chunk uint16, end uint8, cut uint32, fault, op, nth, quirk, fault2, op2, nth2 uint8) {
		size %= 5<<20 + 1
		if chunk == 0 {
			chunk = 1
		}
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*13 + 7)
		}
		rules := fuzzQuirks[int(quirk)%len(fuzzQuirks)]
		rules.MinPartSize = 1 << 20
		mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(rules))
		var faults []faulty.Rule
		for _, d := range [][3]uint8{{fault, op, nth}, {fault2, op2, nth2}} {
			if d[2] > 0 { // nth 0: no fault
				faults = append(faults, faulty.Nth(fuzzOps[int(d[1])%len(fuzzOps)], int(d[2]%8), fuzzFaults[int(d[0])%len(fuzzFaults)]))
			}
		}
		fs := faulty.New(mem, faults...)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := time.Now()
		budget, err := writer.NewBudget(2 << 20) // exactly concurrency × part size
		if err != nil {
			t.Fatal(err)
		}
		w, err := writer.New(ctx, fs, "b", "k", func(wo *writer.Options) {
			wo.Profile = "min=1MiB"
			wo.PartSize = 1 << 20
			wo.Concurrency = 2
			wo.Retry = fastPolicy(func(o *retry.Options) { o.AttemptTimeout = 300 * time.Millisecond })
			wo.MemoryBudget = budget
		})
		if err != nil {
			t.Fatal(err)
		}
		ending := end % 3
		stop := len(data)
		if ending != endClose {
			stop = int(cut % (size + 1))
		}
		var werr error
		for off := 0; off < stop && werr == nil; off += int(chunk) {
			_, werr = w.Write(data[off:min(off+int(chunk), stop)])
		}
		var cerr error
		switch ending {
		case endClose:
			cerr = w.Close()
		case endAbort:
			cerr = w.Abort(context.Background())
		case endCancel:
			cancel()
			cerr = w.Close()
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("took %v: a hang", d)
		}
		injected := fs.Injected()
		if n := budget.InUse(); n != 0 {
			// Flush code shares one budget: a buffer not given back starves every later write.
			t.Fatalf("%d bytes of part buffers still held after the write ended (err %v); injected %v", n, cerr, injected)
		}
		got, stored := mem.Object("b", "k")
		var se *sperrors.Error
		if cerr != nil && !stderrors.As(cerr, &se) {
			t.Fatalf("unclassified error %v", cerr)
		}
		if werr != nil && cerr == nil && ending == endClose {
			t.Fatalf("a Write failed (%v) but Close reported success", werr)
		}
		switch {
		case ending == endClose && cerr == nil:
			if !stored || !bytes.Equal(got, data) {
				t.Fatalf("SILENT CORRUPTION: Close succeeded, the key holds %d bytes (stored %v), wrote %d; injected %v", len(got), stored, len(data), injected)
			}
		case ending == endClose:
			if kind := sperrors.KindOf(cerr); !allowedKinds(injected)[kind] {
				t.Fatalf("Close failed as %s, which none of the injected faults %v allows: %v", kind, injected, cerr)
			}
			if stored && !bytes.Equal(got, data) && !se.ObjectLeft {
				t.Fatalf("Close failed (%v) and left a wrong object without saying so; injected %v", cerr, injected)
			}
		default: // abandoned: nothing may land
			if ending == endCancel && cerr == nil {
				t.Fatalf("Close after a cancelled context reported success")
			}
			if stored {
				t.Fatalf("an abandoned write (%d of %d bytes written) left %d bytes at the key; err %v; injected %v", stop, len(data), len(got), cerr, injected)
			}
		}
		for _, u := range mem.Uploads("b") {
			if se != nil && se.AbortFailed && se.UploadID == u.UploadID {
				continue
			}
			if lostCreateUnswept(injected) && saidMaybeLeft(w.Result(), cerr) {
				continue
			}
			t.Fatalf("incomplete upload %s left without an error naming it (write err %v, end err %v); injected %v", u.UploadID, werr, cerr, injected)
		}
	})
}
