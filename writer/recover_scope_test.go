package writer_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// Recover acts only on records that name its endpoint, the bucket and a key under the prefix it
// is given. A well-formed record naming someone else's upload (another endpoint, another bucket,
// a key outside the prefix, one that only shares the prefix's letters) is reported with why and
// left alone, and so is the upload it names; the record in scope is settled.
func TestRecoverActsOnlyInScope(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.WithBuckets("b", "theirs"))
	j := newJournal(t)
	record := func(endpoint, bucket, key string) journal.ID {
		t.Helper()
		out, err := mem.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bucket, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		id := journal.ID{Endpoint: endpoint, Bucket: bucket, Key: key, UploadID: out.UploadID}
		if err := j.Begin(journal.Record{ID: id, PartSize: part, SourceSize: 3 * part}); err != nil {
			t.Fatal(err)
		}
		if err := j.Release(id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	mine := record(endpointID, "b", "ingest/a.bin")
	want := map[journal.ID]writer.RecoverOutcome{
		mine: writer.RecoverAborted,
		record("http://elsewhere:9000", "b", "ingest/b.bin"): writer.RecoverOtherEndpoint,
		record(endpointID, "theirs", "ingest/c.bin"):         writer.RecoverOtherBucket,
		record(endpointID, "b", "keep/other-team/a.bin"):     writer.RecoverOutcome("outside-prefix"),
		record(endpointID, "b", "ingest-sibling.bin"):        writer.RecoverOutcome("outside-prefix"),
	}
	rep, err := writer.Recover(ctx, mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Bucket: "b", Prefix: "ingest/", Settle: -1})
	if err != nil || len(rep.Uploads) != len(want) {
		t.Fatalf("recover = %+v, %v", rep, err)
	}
	for _, u := range rep.Uploads {
		id := journal.ID{Endpoint: u.Endpoint, Bucket: u.Bucket, Key: u.Key, UploadID: u.UploadID}
		if u.Outcome != want[id] || u.Err != nil {
			t.Errorf("%+v: outcome %s (err %v), want %s", id, u.Outcome, u.Err, want[id])
		}
		if id != mine && !strings.Contains(u.Note, "left alone") {
			t.Errorf("%+v: note %q does not say why it was left alone", id, u.Note)
		}
	}
	var left []string
	for _, bucket := range []string{"b", "theirs"} {
		for _, u := range mem.Uploads(bucket) {
			left = append(left, bucket+"/"+u.Key)
		}
	}
	sort.Strings(left)
	if got := strings.Join(left, " "); got != "b/ingest-sibling.bin b/ingest/b.bin b/keep/other-team/a.bin theirs/ingest/c.bin" {
		t.Errorf("incomplete uploads after Recover: %s; want every one but the record in scope's", got)
	}
	recs, _, err := j.List()
	if err != nil || len(recs) != len(want)-1 {
		t.Fatalf("records after Recover: %d (%v), want all but the settled one kept", len(recs), err)
	}
	for _, r := range recs {
		if r.ID == mine {
			t.Error("the settled record was kept")
		}
	}
	// A prefix names keys of one bucket: without the bucket it is refused, nothing touched.
	if _, err := writer.Recover(ctx, mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Prefix: "ingest/", Settle: -1}); err == nil ||
		!strings.Contains(err.Error(), "Prefix needs RecoverOptions.Bucket") {
		t.Errorf("Prefix without Bucket: %v, want an error naming the rule", err)
	}
}

// The placeholder of a create a crash interrupted leads Recover to an upload of exactly its key:
// on a store that ignores the listing's prefix and would abort by id alone, uploads of other
// keys started at the same moment with no parts are left alone.
func TestRecoverCreatingPlaceholderStaysOnItsKey(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.WithBuckets("b"))
	for _, key := range []string{"ingest/p", "ingest/p2", "zzz-unrelated.bin"} {
		if _, err := mem.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "b", Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	j := newJournal(t)
	id := journal.ID{Endpoint: endpointID, Bucket: "b", Key: "ingest/p", UploadID: journal.CreatingPrefix + "0001"}
	if err := j.Begin(journal.Record{ID: id, PartSize: part, SourceSize: 3 * part, Creating: true}); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(id); err != nil {
		t.Fatal(err)
	}
	st := prefixBlind{byIDOnly{mem, mem}}
	rep, err := writer.Recover(ctx, st, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Bucket: "b", Prefix: "ingest/", Settle: -1})
	if err != nil || rep.Counts[writer.RecoverAborted] != 1 {
		t.Fatalf("recover = %+v, %v; want the placeholder's upload aborted", rep, err)
	}
	var left []string
	for _, u := range mem.Uploads("b") {
		left = append(left, u.Key)
	}
	sort.Strings(left)
	if got := strings.Join(left, " "); got != "ingest/p2 zzz-unrelated.bin" {
		t.Errorf("incomplete uploads after Recover: %q; want only the placeholder's upload aborted", got)
	}
}
