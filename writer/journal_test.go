package writer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

const endpointID = "test-endpoint"

// crashAt leaves what a process killed at part 3 leaves: an open upload with parts 1 and 2,
// journaled (the abort is refused, as if the process had died before sending it).
func crashAt(t *testing.T, env testkit.Env, j *journal.Dir, key string, data []byte) journal.Record {
	t.Helper()
	st := faulty.New(env.Store,
		faulty.Rule{Op: "UploadPart", Part: 3, Fault: faulty.Forbidden()},
		faulty.Always("AbortMultipartUpload", faulty.Forbidden()))
	_, err := writer.Upload(context.Background(), st, env.Bucket, key, bytes.NewReader(data),
		testOpts(env, func(o *writer.Options) { o.Concurrency = 1; o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })...)
	if err == nil {
		t.Fatal("the crashing upload succeeded")
	}
	recs, problems, err := j.List()
	if err != nil || len(problems) != 0 || len(recs) != 1 {
		t.Fatalf("journal after crash: %d records, problems %v, err %v", len(recs), problems, err)
	}
	if got := len(recs[0].Parts); got != 2 {
		t.Fatalf("journal holds %d parts, want 2 (parts 1 and 2 landed before part 3 failed)", got)
	}
	if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key); len(ups) != 1 {
		t.Fatalf("incomplete uploads after the crash = %v, want the journaled one", ups)
	}
	return recs[0]
}

func newJournal(t *testing.T) *journal.Dir {
	j, err := journal.Create(filepath.Join(t.TempDir(), "journal"))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func assertClean(t *testing.T, env testkit.Env, j *journal.Dir, key string, want []byte) {
	t.Helper()
	if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, want) {
		t.Fatalf("object at %s: %d bytes, not the %d source bytes", key, len(got), len(want))
	}
	if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key); len(ups) != 0 {
		t.Fatalf("incomplete uploads left: %v", ups)
	}
	if recs, _, _ := j.List(); len(recs) != 0 {
		t.Fatalf("journal records left: %+v", recs)
	}
}

// A re-run after a crash sends only the parts the store does not hold.
func TestJournalResume(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		data := s3test.RandomBytes(3*part + 1<<20) // parts 5+5+5+1 MiB
		j := newJournal(t)
		crashAt(t, env, j, "resume/k", data)
		res, err := writer.Upload(context.Background(), env.Store, env.Bucket, "resume/k", bytes.NewReader(data),
			testOpts(env, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })...)
		if err != nil {
			t.Fatal(err)
		}
		if res.ResumedParts != 2 || res.ResumedBytes != 2*part || res.BytesSent != int64(len(data))-2*part {
			t.Fatalf("resumed %d parts, %d bytes, sent %d; want 2 parts, %d bytes reused", res.ResumedParts, res.ResumedBytes, res.BytesSent, 2*part)
		}
		assertClean(t, env, j, "resume/k", data)
	})
}

// A part whose source bytes changed since the crash is sent again, never reused.
func TestJournalResumeChangedSource(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		data := s3test.RandomBytes(3*part + 1<<20)
		j := newJournal(t)
		crashAt(t, env, j, "changed/k", data)
		data[100] ^= 0xff // part 1 differs now
		res, err := writer.Upload(context.Background(), env.Store, env.Bucket, "changed/k", bytes.NewReader(data),
			testOpts(env, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })...)
		if err != nil {
			t.Fatal(err)
		}
		if res.ResumedParts != 1 {
			t.Fatalf("resumed %d parts, want 1 (part 2; part 1 changed)", res.ResumedParts)
		}
		assertClean(t, env, j, "changed/k", data)
	})
}

// A Complete that landed before the process died (here: the HEAD after it failed) is found
// landed, by Recover and by a re-run alike; nothing is sent again.
func TestJournalLandedBeforeCrash(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		data := s3test.RandomBytes(2*part + 1)
		for _, via := range []string{"recover", "rerun"} {
			key := "landed/" + via
			j := newJournal(t)
			st := faulty.New(env.Store, faulty.Always("HeadObject", faulty.Forbidden()))
			if _, err := writer.Upload(context.Background(), st, env.Bucket, key, bytes.NewReader(data),
				testOpts(env, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })...); err == nil {
				t.Fatal("upload with a refused HEAD succeeded")
			}
			recs, _, _ := j.List()
			if len(recs) != 1 || recs[0].Object == nil {
				t.Fatalf("journal after the crash = %+v, want one record with the intended object", recs)
			}
			if via == "recover" {
				dry, err := writer.Recover(context.Background(), env.Store, j.Path(), writer.RecoverOptions{Endpoint: endpointID, DryRun: true})
				if err != nil || dry.Counts[writer.RecoverLanded] != 1 {
					t.Fatalf("dry run = %+v, %v; want landed", dry, err)
				}
				if recs, _, _ := j.List(); len(recs) != 1 {
					t.Fatal("a dry run dropped the record")
				}
				rep, err := writer.Recover(context.Background(), env.Store, j.Path(), writer.RecoverOptions{Endpoint: endpointID})
				if err != nil || rep.Counts[writer.RecoverLanded] != 1 || len(rep.Uploads) != 1 {
					t.Fatalf("recover = %+v, %v; want landed", rep, err)
				}
			} else {
				res, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, bytes.NewReader(data),
					testOpts(env, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })...)
				if err != nil {
					t.Fatal(err)
				}
				if !res.AlreadyExisted || !res.CommitAnswerLost || res.ResumedParts != 3 || res.BytesSent != 0 {
					t.Fatalf("re-run: already %v, commit answer lost %v, resumed %d, sent %d; want the crashed run's landed object found, nothing sent",
						res.AlreadyExisted, res.CommitAnswerLost, res.ResumedParts, res.BytesSent)
				}
			}
			assertClean(t, env, j, key, data)
		}
	})
}

// Recover aborts exactly the journaled upload: not another key's upload, not a record of another
// endpoint, not a record a live writer holds, and not on the word of a file that is not a record.
func TestRecoverTouchesOnlyItsRecords(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx := context.Background()
		data := s3test.RandomBytes(3*part + 1)
		j := newJournal(t)
		crashed := crashAt(t, env, j, "rec/k", data)
		// An unrelated incomplete upload of a neighbouring key, and one of the same key.
		var others []string
		for _, key := range []string{"rec/k2", "rec/k"} {
			out, err := env.Store.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: env.Bucket, Key: key})
			if err != nil {
				t.Fatal(err)
			}
			others = append(others, out.UploadID)
			defer func() {
				_ = env.Store.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: env.Bucket, Key: key, UploadID: out.UploadID})
			}()
		}
		// A record for another endpoint naming the unrelated upload: never acted on here.
		foreign := journal.ID{Endpoint: "http://elsewhere:9000", Bucket: env.Bucket, Key: "rec/k2", UploadID: others[0]}
		if err := j.Begin(journal.Record{ID: foreign, PartSize: part}); err != nil {
			t.Fatal(err)
		}
		if err := j.Release(foreign); err != nil {
			t.Fatal(err)
		}
		// A file that is not a record.
		if err := os.WriteFile(filepath.Join(j.Path(), "README"), []byte("not a record"), 0o600); err != nil {
			t.Fatal(err)
		}
		// A live writer (another handle on the directory) holds the crashed record: left alone.
		other, err := journal.Open(j.Path())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Claim(crashed.ID); err != nil {
			t.Fatal(err)
		}
		rep, err := writer.Recover(ctx, env.Store, j.Path(), writer.RecoverOptions{Endpoint: endpointID})
		if err != nil || rep.Counts[writer.RecoverInUse] != 1 || rep.Counts[writer.RecoverOtherEndpoint] != 1 || len(rep.Problems) != 1 {
			t.Fatalf("recover with the record held = %+v, %v", rep, err)
		}
		if err := other.Release(crashed.ID); err != nil {
			t.Fatal(err)
		}
		dry, err := writer.Recover(ctx, env.Store, j.Path(), writer.RecoverOptions{Endpoint: endpointID, DryRun: true})
		if err != nil || dry.Counts[writer.RecoverWouldAbort] != 1 {
			t.Fatalf("dry run = %+v, %v", dry, err)
		}
		if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, "rec/"); len(ups) != 3 {
			t.Fatalf("after the dry run: %d incomplete uploads, want 3 untouched", len(ups))
		}
		rep, err = writer.Recover(ctx, env.Store, j.Path(), writer.RecoverOptions{Endpoint: endpointID})
		if err != nil || rep.Counts[writer.RecoverAborted] != 1 || rep.Counts[writer.RecoverOtherEndpoint] != 1 {
			t.Fatalf("recover = %+v, %v", rep, err)
		}
		left := s3test.IncompleteUploads(t, env.Srv, env.Bucket, "rec/")
		if len(left) != 2 {
			t.Fatalf("incomplete uploads after recover = %v, want exactly the two unrelated ones", left)
		}
		for _, id := range left {
			if strings.HasSuffix(id, "@"+crashed.UploadID) {
				t.Fatalf("the journaled upload %s is still there", id)
			}
		}
		recs, _, _ := j.List()
		if len(recs) != 1 || recs[0].ID != foreign {
			t.Fatalf("records left = %+v, want only the other endpoint's", recs)
		}
		// Again: nothing of ours left, nothing else touched.
		rep, err = writer.Recover(ctx, env.Store, j.Path(), writer.RecoverOptions{Endpoint: endpointID})
		if err != nil || len(rep.Uploads) != 1 || rep.Uploads[0].Outcome != writer.RecoverOtherEndpoint {
			t.Fatalf("second recover = %+v, %v", rep, err)
		}
		if _, err := writer.Recover(ctx, env.Store, j.Path(), writer.RecoverOptions{}); err == nil {
			t.Fatal("Recover without an endpoint identity succeeded")
		}
	})
}

// A writer killed while its CreateMultipartUpload was in flight leaves only the placeholder:
// Recover aborts the empty upload of exactly that key that no record names, and nothing else.
func TestRecoverKilledDuringCreate(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx := context.Background()
		j := newJournal(t)
		placeholder := journal.ID{Endpoint: endpointID, Bucket: env.Bucket, Key: "create/k", UploadID: journal.CreatingPrefix + "0123"}
		if err := j.Begin(journal.Record{ID: placeholder, PartSize: part, SourceSize: 3 * part, Creating: true}); err != nil {
			t.Fatal(err)
		}
		if err := j.Release(placeholder); err != nil {
			t.Fatal(err)
		}
		create := func(key string) string {
			out, err := env.Store.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: env.Bucket, Key: key})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = env.Store.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: env.Bucket, Key: key, UploadID: out.UploadID})
			})
			return out.UploadID
		}
		orphan := create("create/k")      // what the killed create left
		neighbour := create("create/k-2") // another key under the same prefix
		withParts := create("create/k")   // someone's upload of the key that has a part
		if _, err := env.Store.UploadPart(ctx, &store.UploadPartInput{Bucket: env.Bucket, Key: "create/k", UploadID: withParts, PartNumber: 1,
			Body: bytes.NewReader(make([]byte, 1024)), ContentLength: 1024}); err != nil {
			t.Fatal(err)
		}
		dry, err := writer.Recover(ctx, env.Store, j.Path(), writer.RecoverOptions{Endpoint: endpointID, DryRun: true})
		if err != nil || dry.Counts[writer.RecoverWouldAbort] != 1 {
			t.Fatalf("dry run = %+v, %v", dry, err)
		}
		rep, err := writer.Recover(ctx, env.Store, j.Path(), writer.RecoverOptions{Endpoint: endpointID})
		if err != nil || rep.Counts[writer.RecoverAborted] != 1 {
			t.Fatalf("recover = %+v, %v", rep, err)
		}
		left := strings.Join(s3test.IncompleteUploads(t, env.Srv, env.Bucket, "create/"), " ")
		if strings.Contains(left, orphan) || !strings.Contains(left, neighbour) || !strings.Contains(left, withParts) {
			t.Fatalf("incomplete uploads after recover: %s; want only %s aborted", left, orphan)
		}
		if recs, _, _ := j.List(); len(recs) != 0 {
			t.Fatalf("records left: %+v", recs)
		}
	})
}

// A journal that cannot record stops the write before any part is sent: Permanent, the upload
// aborted, nothing at the key.
func TestJournalFailureStopsTheWrite(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		j := newJournal(t)
		// A file where the directory should be: nothing can be recorded (a missing directory
		// would be created).
		if err := os.RemoveAll(j.Path()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(j.Path(), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		data := s3test.RandomBytes(2*part + 1)
		res, err := writer.Upload(context.Background(), env.Store, env.Bucket, "nojournal/k", bytes.NewReader(data),
			testOpts(env, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })...)
		if err == nil || !errors.Is(err, sperrors.Permanent) {
			t.Fatalf("Upload with a broken journal = %+v, %v; want a Permanent error", res, err)
		}
		if s3test.Exists(t, env.Srv, env.Bucket, "nojournal/k") {
			t.Fatal("an object landed although the journal could not record it")
		}
		if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, "nojournal/"); len(ups) != 0 {
			t.Fatalf("incomplete uploads left: %v", ups)
		}
	})
}
