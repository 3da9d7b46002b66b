package writer_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// listedTwice reports whether the notes say the store listed a part twice.
func listedTwice(notes []string) bool {
	for _, n := range notes {
		if strings.Contains(n, "listed part") && strings.Contains(n, "twice") {
			return true
		}
	}
	return false
}

// A store that lists every attempt of a re-sent part (memstore ListEveryAttempt): a part whose
// first answer was lost, or whose first body the store kept damaged while answering 200, is
// listed twice, and the write lands: the entry matching the kept attempt's receipt decides.
func TestPartListedTwiceLands(t *testing.T) {
	data := make([]byte, 3<<20+5)
	for i := range data {
		data[i] = byte(i*7 + 3)
	}
	up := faulty.OpUploadPart
	for _, c := range []struct {
		name  string
		rules []faulty.Rule
		quirk memstore.Rules
		// stream is how a one-pass source ends: a part kept damaged and never re-sent is
		// listed once, and the write fails Integrity as for any part kept wrong.
		stream sperrors.Kind
	}{
		{"answer lost", []faulty.Rule{faulty.Nth(up, 2, faulty.DropResponse())}, memstore.Rules{}, sperrors.Unknown},
		{"stored truncated", []faulty.Rule{faulty.Nth(up, 2, faulty.Truncate())}, memstore.Rules{}, sperrors.Integrity},
		{"stored flipped", []faulty.Rule{faulty.Nth(up, 2, faulty.FlipByte())}, memstore.Rules{}, sperrors.Integrity},
		{"stored truncated, checksums ignored", []faulty.Rule{faulty.Nth(up, 2, faulty.Truncate())}, memstore.Rules{IgnoreChecksumHeaders: true}, sperrors.Integrity},
		{"answer lost, then stored flipped, checksums ignored",
			[]faulty.Rule{faulty.Nth(up, 2, faulty.DropResponse()), faulty.Nth(up, 3, faulty.FlipByte())}, memstore.Rules{IgnoreChecksumHeaders: true}, sperrors.Integrity},
	} {
		for _, src := range []source{replayable, stream} {
			t.Run(c.name+"/"+src.String(), func(t *testing.T) {
				rules := c.quirk
				rules.MinPartSize, rules.ListEveryAttempt = 1<<20, true
				mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(rules))
				fs := faulty.New(mem, c.rules...)
				core, logs := observer.New(zap.WarnLevel)
				res, err := writer.Upload(context.Background(), fs, "b", "k", src.reader(data),
					func(o *writer.Options) {
						o.Profile = "min=1MiB"
						o.PartSize = 1 << 20
						o.Concurrency = 1
						o.Retry = fastPolicy()
						o.Logger = zap.New(core)
						o.Savings &^= writer.SaveRereads // the listing is what this is about
					})
				if u := mem.Uploads("b"); len(u) != 0 {
					t.Fatalf("incomplete uploads left: %v", u)
				}
				if src == stream && c.stream != sperrors.Unknown {
					if got, ok := mem.Object("b", "k"); sperrors.KindOf(err) != c.stream || (ok && !bytes.Equal(got, data)) {
						t.Fatalf("got %v (stored %v); want %s and nothing wrong at the key", err, ok, c.stream)
					}
					return
				}
				if err != nil {
					t.Fatalf("write failed: %v; injected %v", err, fs.Injected())
				}
				if got, ok := mem.Object("b", "k"); !ok || !bytes.Equal(got, data) {
					t.Fatalf("the key holds %d bytes (stored %v), wrote %d", len(got), ok, len(data))
				}
				if !listedTwice(res.Notes) {
					t.Fatalf("Notes do not say a part was listed twice: %q", res.Notes)
				}
				entries := logs.FilterMessageSnippet("listed a part more than once").All()
				if len(entries) == 0 {
					t.Fatalf("no log line for the part listed twice")
				}
				f := entries[0].ContextMap()
				if f["bucket"] != "b" || f["key"] != "k" || f["part"] != int32(2) || f["upload_id"] != res.UploadID || f["upload_id"] == "" {
					t.Fatalf("log fields %v, want bucket b, key k, part 2, upload id %s", f, res.UploadID)
				}
			})
		}
	}
}

// twiceLister lists part 2 twice with neither entry matching what the store keeps (as a store
// that lost the attempt the writer kept), on its first ListParts only.
type twiceLister struct {
	store.Store
	done atomic.Bool
}

func (s *twiceLister) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	out, err := s.Store.ListParts(ctx, in)
	if err != nil || s.done.Swap(true) {
		return out, err
	}
	var parts []store.Part
	for _, p := range out.Parts {
		if p.PartNumber == 2 {
			stale, other := p, p
			stale.Size /= 2
			other.ETag = "0123456789abcdef0123456789abcdef"
			parts = append(parts, stale, other)
			continue
		}
		parts = append(parts, p)
	}
	out.Parts = parts
	return out, nil
}

// When no entry of a part listed twice matches the receipt, the part is re-sent from a
// replayable source, or the write fails Integrity (a stream's part is gone), leaving nothing.
func TestPartListedTwiceNoneMatches(t *testing.T) {
	data := make([]byte, 3<<20+5)
	for i := range data {
		data[i] = byte(i*5 + 1)
	}
	for _, src := range []source{replayable, stream} {
		t.Run(src.String(), func(t *testing.T) {
			mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20}))
			st := &twiceLister{Store: mem}
			res, err := writer.Upload(context.Background(), st, "b", "k", src.reader(data),
				func(o *writer.Options) {
					o.Profile = "min=1MiB"
					o.PartSize = 1 << 20
					o.Concurrency = 2
					o.Retry = fastPolicy()
					o.Savings &^= writer.SaveRereads // the listing is what this is about
				})
			if u := mem.Uploads("b"); len(u) != 0 {
				t.Fatalf("incomplete uploads left: %v", u)
			}
			got, stored := mem.Object("b", "k")
			if src == replayable {
				if err != nil || !stored || !bytes.Equal(got, data) {
					t.Fatalf("got %v (stored %v, %d bytes); want the write landed after re-sending part 2", err, stored, len(got))
				}
				// 4 parts, part 2 again, and the checksum probe (the profile says nothing of HEAD).
				if !listedTwice(res.Notes) || mem.Requests("UploadPart") != 6 {
					t.Fatalf("notes %q, %d UploadPart requests; want the note and part 2 sent again", res.Notes, mem.Requests("UploadPart"))
				}
				return
			}
			if sperrors.KindOf(err) != sperrors.Integrity || stored {
				t.Fatalf("got %v (stored %v); want an Integrity failure and nothing at the key", err, stored)
			}
			if !strings.Contains(err.Error(), "none matching") {
				t.Fatalf("error %v does not say no entry matched", err)
			}
		})
	}
}

// A re-run after a crash reuses a journaled part the store lists once per attempt: the entry
// with the recorded ETag is the attempt the record kept, wherever the store lists it.
func TestResumeReusesAPartListedTwice(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20, ListEveryAttempt: true}))
	j := newJournal(t)
	data := make([]byte, 3<<20+7)
	for i := range data {
		data[i] = byte(i*3 + i>>13)
	}
	// etagmd5: the store's part ETags are MD5s, so a part stored truncated shows in its receipt.
	opts := []func(*writer.Options){func(o *writer.Options) {
		o.Profile = "min=1MiB,etagmd5"
		o.PartSize = 1 << 20
		o.Concurrency = 1
		o.Retry = fastPolicy()
		o.JournalDir, o.JournalEndpoint = j.Path(), endpointID
	}}
	// Part 2's first body is stored truncated (the receipt shows it, so it is sent again), then
	// the write dies at part 4 with its abort refused: part 2 is listed twice, the kept attempt
	// first (memstore lists the current attempt first), the truncated one last.
	crashing := faulty.New(mem, faulty.Nth(faulty.OpUploadPart, 2, faulty.Truncate()),
		faulty.Rule{Op: faulty.OpUploadPart, Part: 4, Fault: faulty.Forbidden()}, faulty.Always(faulty.OpAbortMultipart, faulty.Forbidden()))
	if _, err := writer.Upload(context.Background(), crashing, "b", "k", bytes.NewReader(data), opts...); err == nil {
		t.Fatal("the crashing write succeeded")
	}
	res, err := writer.Upload(context.Background(), mem, "b", "k", bytes.NewReader(data), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) {
		t.Fatal("the re-run did not land the source")
	}
	if res.ResumedParts != 3 || res.BytesSent != 7 || !listedTwice(res.Notes) {
		t.Fatalf("resumed %d parts, sent %d bytes, notes %q; want parts 1-3 reused and part 2 noted as listed twice", res.ResumedParts, res.BytesSent, res.Notes)
	}
	if recs, _, _ := j.List(); len(recs) != 0 || len(mem.Uploads("b")) != 0 {
		t.Fatalf("after the re-run: records %+v, uploads %v", recs, mem.Uploads("b"))
	}
}
