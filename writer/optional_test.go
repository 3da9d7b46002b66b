package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// A store that lacks an optional operation (s3rver: ListParts 405, ListMultipartUploads 501)
// still gets verified writes: the check that needs the operation is skipped and named in
// Result.Notes, and the post-commit proof decides.

func hasNote(notes []string, parts ...string) bool {
	for _, n := range notes {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(n, p)
		}
		if all {
			return true
		}
	}
	return false
}

func TestLacksListPartsStillVerified(t *testing.T) {
	lacks := func(r memstore.Rules, status int) memstore.Rules { r.LacksListParts = status; return r }
	cases := []struct {
		name   string
		rules  memstore.Rules
		method verify.Method
	}{
		{"405, store keeps checksums", lacks(memstore.Rules{}, 405), verify.MethodCRC32C},
		{"501, minio-like", lacks(minioLike, 501), verify.MethodCRC32C},
		{"405, ceph-like (MD5 ETags only)", lacks(cephLike, 405), verify.MethodETagMD5},
		{"405, opaque ETags (read-back)", lacks(opaque, 405), verify.MethodReadBack},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := memstore.New(memstore.WithBuckets(unitBucket), memstore.WithRules(c.rules))
			// Without SaveRereads: on a store that checks, proven receipts would leave the
			// listing out, and this is about a store that cannot give it.
			up, err := writer.NewUploader(st, func(o *writer.Options) { o.Savings &^= writer.SaveRereads })
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range []string{"a", "b"} {
				data := randomBytes(t, largeSize)
				res, err := writeWith(t, up, key, data)
				if err != nil {
					t.Fatalf("write %d: %v", i+1, err)
				}
				if got, _ := st.Object(unitBucket, key); !bytes.Equal(got, data) {
					t.Fatalf("write %d: stored bytes differ from the written ones", i+1)
				}
				if !res.Multipart || !res.VerifiedStrong || res.Verified != c.method {
					t.Fatalf("write %d: multipart %v verified %s strong %v, want %s", i+1, res.Multipart, res.Verified, res.VerifiedStrong, c.method)
				}
				if !hasNote(res.Notes, "pre-Complete ListParts check did not run", "does not support ListParts (HTTP") {
					t.Fatalf("write %d: notes %q do not name the skipped ListParts check", i+1, res.Notes)
				}
			}
			// The Uploader remembered: the second write did not ask again.
			if n := st.Requests("ListParts"); n != 1 {
				t.Fatalf("ListParts sent %d times over two writes through one Uploader, want 1", n)
			}
			if ups := st.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("uploads left: %v", ups)
			}
		})
	}
}

// Skipping the listing never makes a write weak: with nothing else to prove it, Unverifiable.
func TestLacksListPartsNothingProves(t *testing.T) {
	st := memstore.New(memstore.WithBuckets(unitBucket), memstore.WithRules(memstore.Rules{IgnoreChecksumHeaders: true, OpaqueETags: true, LacksListParts: 405}))
	_, err := write(t, st, "k", randomBytes(t, largeSize), func(o *writer.Options) { o.ReadBackLimit = mib })
	var e *sperrors.Error
	if !errors.As(err, &e) || e.Kind != sperrors.Integrity || e.Code != sperrors.CodeUnverifiable {
		t.Fatalf("err %v, want Integrity Unverifiable", err)
	}
	if _, ok := st.Object(unitBucket, "k"); ok {
		t.Fatal("the unproven object was left at the key")
	}
}

// An abort the store took but cannot confirm (no ListParts) is said so, not "left behind".
func TestLacksListPartsAbortNotConfirmable(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets(unitBucket), memstore.WithRules(memstore.Rules{LacksListParts: 405}))
	st := faulty.New(mem, faulty.Always(faulty.OpUploadPart, faulty.Forbidden()))
	// Upload returns Close's error (a Write's error would be the part's, before the abort).
	_, err := writer.Upload(context.Background(), st, unitBucket, "k", bytes.NewReader(randomBytes(t, largeSize)), func(o *writer.Options) { o.PartSize = 5 * mib })
	var e *sperrors.Error
	if !errors.As(err, &e) || e.Kind != sperrors.Permanent {
		t.Fatalf("err %v, want Permanent", err)
	}
	if e.AbortFailed {
		t.Fatalf("AbortFailed set for an abort the store took: %v", err)
	}
	if !strings.Contains(err.Error(), "sent, answered with success, not confirmable") || !strings.Contains(err.Error(), "405 MethodNotAllowed") {
		t.Fatalf("error %q does not say the abort was sent but not confirmable", err)
	}
	if ups := mem.Uploads(unitBucket); len(ups) != 0 {
		t.Fatalf("uploads left: %v", ups)
	}
}

// A store that cannot abort: the upload is named as left behind, with why; so is the checksum
// probe's own upload when the probe got as far as creating it (the write may fail first).
func TestLacksAbortNamesTheUpload(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets(unitBucket), memstore.WithRules(memstore.Rules{LacksListParts: 405, LacksAbort: 405}))
	st := faulty.New(mem, faulty.Always(faulty.OpUploadPart, faulty.Forbidden()))
	// Upload returns Close's error (a Write's error would be the part's, before the abort).
	_, err := writer.Upload(context.Background(), st, unitBucket, "k", bytes.NewReader(randomBytes(t, largeSize)), func(o *writer.Options) { o.PartSize = 5 * mib })
	var e *sperrors.Error
	if !errors.As(err, &e) || !e.AbortFailed || e.UploadID == "" {
		t.Fatalf("err %v, want AbortFailed with the upload id", err)
	}
	if !strings.Contains(err.Error(), "does not support AbortMultipartUpload (HTTP 405 MethodNotAllowed)") {
		t.Fatalf("error %q does not say why the upload stays", err)
	}
	ups := mem.Uploads(unitBucket)
	if len(ups) == 0 || len(ups) > 2 {
		t.Fatalf("uploads %v, want the write's and at most the probe's", ups)
	}
	for _, u := range ups {
		if u.UploadID != e.UploadID && !strings.Contains(e.Message, u.UploadID) {
			t.Fatalf("upload %s left and not named: %v", u.UploadID, err)
		}
	}
}

// HEAD's checksum mode refused: the HEAD is sent without it, the ETag proves the object, and
// the Uploader's later writes do not ask for it again. SaveRereads is off, so every write sends
// its HEAD (at defaults a single PUT's answer would stand for it).
func TestLacksHeadChecksumMode(t *testing.T) {
	for _, status := range []int{405, 501} {
		st := memstore.New(memstore.WithBuckets(unitBucket), memstore.WithRules(memstore.Rules{LacksHeadChecksumMode: status}))
		up, err := writer.NewUploader(st, func(o *writer.Options) { o.Savings &^= writer.SaveRereads })
		if err != nil {
			t.Fatal(err)
		}
		for i, size := range []int{smallSize, largeSize, smallSize} {
			heads := st.Requests("HeadObject")
			data := randomBytes(t, size)
			res, err := writeWith(t, up, "k", data)
			if err != nil {
				t.Fatalf("%d: write %d: %v", status, i+1, err)
			}
			if got, _ := st.Object(unitBucket, "k"); !bytes.Equal(got, data) {
				t.Fatalf("%d: write %d: stored bytes differ", status, i+1)
			}
			if !res.VerifiedStrong || res.Verified != verify.MethodETagMD5 {
				t.Fatalf("%d: write %d: verified %s, want etag-md5", status, i+1, res.Verified)
			}
			if !hasNote(res.Notes, "reading the stored checksum after commit did not run", "checksum mode") {
				t.Fatalf("%d: write %d: notes %q do not name the skipped checksum read", status, i+1, res.Notes)
			}
			want := 1
			if i == 0 {
				want = 2 // the refused HEAD, then the plain one
			}
			if n := st.Requests("HeadObject") - heads; n != want {
				t.Fatalf("%d: write %d sent %d HEADs, want %d", status, i+1, n, want)
			}
		}
	}
}

// A lost CreateMultipartUpload answer on a store that cannot list uploads: the Result says the
// store cannot list them (MaybeLeftBehind), not that nothing was found.
func TestLacksListUploadsAfterLostCreate(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets(unitBucket), memstore.WithRules(memstore.Rules{LacksListUploads: 501}))
	st := faulty.New(mem, faulty.First(faulty.OpCreateMultipartUpload, 1, faulty.DropResponse()))
	data := randomBytes(t, largeSize)
	res, err := write(t, st, "k", data)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mem.Object(unitBucket, "k"); !bytes.Equal(got, data) {
		t.Fatal("stored bytes differ")
	}
	if !res.MaybeLeftBehind || !hasNote(res.Notes, "does not support ListMultipartUploads (HTTP 501 NotImplemented)") {
		t.Fatalf("maybe left %v, notes %q: want the store's missing listing named", res.MaybeLeftBehind, res.Notes)
	}
	if ups := mem.Uploads(unitBucket); len(ups) != 1 {
		t.Fatalf("uploads %v: the lost create's upload is the one that may remain", ups)
	}
}

// A journaled upload cannot be resumed on a store that lists no parts: the write starts a new
// upload and lands, says why, and keeps the old record (and upload) for Recover.
func TestLacksListPartsResumeStartsAfresh(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{LacksListParts: 405}))
	old, err := mem.CreateMultipartUpload(context.Background(), &store.CreateMultipartUploadInput{Bucket: "b", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	j := newJournal(t)
	id := journal.ID{Endpoint: endpointID, Bucket: "b", Key: "k", UploadID: old.UploadID}
	if err := j.Begin(journal.Record{ID: id, PartSize: 5 * mib, SourceSize: largeSize, ChecksumAlgorithm: string(store.ChecksumCRC32C)}); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(id); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, largeSize)
	res, err := writer.Upload(context.Background(), mem, "b", "k", bytes.NewReader(data),
		func(o *writer.Options) { o.PartSize = 5 * mib; o.JournalDir, o.JournalEndpoint = j.Path(), endpointID })
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) || !res.VerifiedStrong || res.ResumedParts != 0 {
		t.Fatalf("landed %v, verified %s, resumed %d: want the bytes, strongly verified, nothing resumed", bytes.Equal(got, data), res.Verified, res.ResumedParts)
	}
	if !hasNote(res.Notes, "resuming journaled upload "+old.UploadID+" did not run", "does not support ListParts (HTTP 405 MethodNotAllowed)") {
		t.Fatalf("notes %q do not say why the journaled upload was not resumed", res.Notes)
	}
	recs, _, err := j.List()
	if err != nil || len(recs) != 1 || recs[0].UploadID != old.UploadID {
		t.Fatalf("journal %+v, %v: want the old record kept for Recover", recs, err)
	}
}

// A store refusing If-None-Match (501, as B2 does) under a profile that says it honours it: the
// create-only write goes on with the HEAD check instead, lands, and says so; an existing key is
// still a Precondition error and stays untouched.
func TestConditionalCreateNotImplemented(t *testing.T) {
	st := memstore.New(memstore.WithBuckets(unitBucket), memstore.WithRules(memstore.Rules{NoConditionalWrites: true}))
	up, err := writer.NewUploader(st, func(o *writer.Options) { o.Profile = "aws"; o.CreateOnly = true })
	if err != nil {
		t.Fatal(err)
	}
	for i, size := range []int{smallSize, largeSize, smallSize, largeSize} {
		key := fmt.Sprintf("k%d", i)
		data := randomBytes(t, size)
		res, err := writeWith(t, up, key, data)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if got, _ := st.Object(unitBucket, key); !bytes.Equal(got, data) || !res.VerifiedStrong {
			t.Fatalf("%s: stored bytes equal %v, verified %s", key, bytes.Equal(got, data), res.Verified)
		}
		if !hasNote(res.Notes, "the conditional create did not run: the store does not support If-None-Match: * on", "HTTP 501 NotImplemented", "checked free with a HEAD") {
			t.Fatalf("%s: notes %q do not say the conditional create was replaced", key, res.Notes)
		}
		// An existing key: refused by the HEAD check, the object untouched.
		_, err = writeWith(t, up, key, randomBytes(t, size))
		if !errors.Is(err, sperrors.Precondition) {
			t.Fatalf("%s again: %v, want Precondition", key, err)
		}
		if got, _ := st.Object(unitBucket, key); !bytes.Equal(got, data) {
			t.Fatalf("%s: a refused create-only write changed the object", key)
		}
	}
	if ups := st.Uploads(unitBucket); len(ups) != 0 {
		t.Fatalf("uploads left: %v", ups)
	}
}
