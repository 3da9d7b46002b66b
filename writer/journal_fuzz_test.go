package writer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// fuzzPart keeps each fuzzed upload small: 4 parts of 1 MiB (the smallest part a plan makes)
// and a last one of 100 bytes.
const fuzzPart = 1 << 20

// What FuzzJournalRecord changes in the crashed upload's record and store; bit flags.
const (
	editPart     = 1 << iota // rewrite (or add) one part entry of the record
	editObject               // give the record an intended object
	storeExtra               // store one more part, of any number and length, at the upload
	editBytes                // corrupt the record file's bytes
	editIdentity             // change the record's part size or source size
)

// FuzzJournalRecord feeds a re-run and Recover a journal record that a crash, a disk fault or a
// hand edit corrupted, beside parts at the store that need not match it. The store is healthy and
// lenient (no part minimum, as on Garage), so it catches nothing for the writer: whatever the
// record says, the re-run must land exactly the source, and Recover must report, not panic, and
// leave the landed object alone. The seeds run with the unit tests; fuzz with
//
//	go test -run '^$' -fuzz FuzzJournalRecord -fuzztime 5m ./writer/
func FuzzJournalRecord(f *testing.F) {
	f.Add(uint8(0), int32(0), int64(0), "", "", "", int32(0), int32(0), []byte(nil))
	// A part entry whose size is not the plan's, backed by a stored part of that size.
	f.Add(uint8(editPart|storeExtra), int32(2), int64(1), "", "", "", int32(1), int32(1), []byte(nil))
	// A part past the end of the source; a part number no plan has.
	f.Add(uint8(editPart|storeExtra), int32(9), int64(fuzzPart), "", "", "", int32(8), int32(fuzzPart), []byte(nil))
	f.Add(uint8(editPart), int32(1<<31-1), int64(1<<62), "e", "c", "m", int32(0), int32(0), []byte(nil))
	// An intended object that is not at the key, or names another checksum.
	f.Add(uint8(editObject), int32(0), int64(3*fuzzPart), "", "AAAAAA==", "CRC32C", int32(0), int32(0), []byte(nil))
	f.Add(uint8(editObject), int32(0), int64(-5), "x", "", "SHA1", int32(0), int32(0), []byte(nil))
	// A truncated file, a flipped byte, an edited part size.
	f.Add(uint8(editBytes), int32(0), int64(0), "", "", "", int32(0), int32(0), []byte{0, 100})
	f.Add(uint8(editBytes), int32(0), int64(0), "", "", "", int32(0), int32(0), []byte{1, 40, '9'})
	f.Add(uint8(editIdentity), int32(0), int64(fuzzPart/2), "", "", "", int32(0), int32(0), []byte(nil))
	data := make([]byte, 4*fuzzPart+100)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	f.Fuzz(func(t *testing.T, edits uint8, number int32, size int64, etag, sum, md5hex string, storeNumber, storeLen int32, raw []byte) {
		ctx := context.Background()
		mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: -1}))
		j := newJournal(t)
		opts := []func(*writer.Options){
			func(o *writer.Options) {
				o.Profile = "profile=minio,min=1MiB"
				o.PartSize = fuzzPart
				o.Threshold = fuzzPart
				o.Concurrency = 1
				o.Retry = fastPolicy()
				o.JournalDir, o.JournalEndpoint = j.Path(), endpointID
			},
		}
		// The crash: parts 1 and 2 landed and were journaled, part 3 failed, the abort never went.
		crashing := faulty.New(mem, faulty.Rule{Op: "UploadPart", Part: 3, Fault: faulty.Forbidden()},
			faulty.Always("AbortMultipartUpload", faulty.Forbidden()))
		if res, err := writer.Upload(ctx, crashing, "b", "k", bytes.NewReader(data), opts...); err == nil {
			t.Fatalf("the crashing upload succeeded: %+v", res)
		}
		recs, _, err := j.List()
		if err != nil || len(recs) != 1 || len(recs[0].Parts) != 2 {
			t.Fatalf("journal after the crash: %+v, %v", recs, err)
		}
		rec := recs[0]

		if edits&storeExtra != 0 {
			n := 1 + int32(uint32(storeNumber)%12)
			off := min(int64(n-1)*fuzzPart, int64(len(data)))
			body := data[off:min(off+int64(uint32(storeLen)%(2*fuzzPart)), int64(len(data)))]
			crc, err := integrity.Sum(store.ChecksumCRC32C, body)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = mem.UploadPart(ctx, &store.UploadPartInput{Bucket: "b", Key: "k", UploadID: rec.UploadID, PartNumber: n,
				Body: bytes.NewReader(body), ContentLength: int64(len(body)), Checksum: store.Checksum{Algorithm: store.ChecksumCRC32C, Value: crc}})
			if edits&editPart != 0 { // an entry that agrees with what the store and the source hold
				number, size, sum = n, int64(len(body)), crc
				if lp := listedPart(t, mem, rec.UploadID, n); lp != nil {
					etag = lp.ETag
				}
			}
		}
		if edits&editPart != 0 {
			p := journal.Part{Number: number, Size: size, ETag: etag, Checksum: sum, MD5: md5hex}
			if i := int(uint32(number)) % 3; i < len(rec.Parts) && edits&storeExtra == 0 {
				rec.Parts[i] = p
			} else {
				rec.Parts = append(rec.Parts, p)
			}
		}
		if edits&editObject != 0 {
			rec.Object = &journal.Object{Size: size, ChecksumAlgorithm: md5hex, Checksum: sum, ETag: etag}
		}
		if edits&editIdentity != 0 {
			rec.PartSize += size % (2 * fuzzPart)
			rec.SourceSize += int64(number) % fuzzPart
		}
		file := recordFile(t, j)
		text, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if edits&editBytes != 0 && len(raw) > 0 {
			text = corrupt(text, raw)
		}
		if err := os.WriteFile(file, text, 0o600); err != nil {
			t.Fatal(err)
		}

		if _, err := writer.Recover(ctx, mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, DryRun: true, Settle: -1}); err != nil {
			t.Fatalf("a dry-run Recover over a corrupt record: %v", err)
		}
		res, err := writer.Upload(ctx, mem, "b", "k", bytes.NewReader(data), opts...)
		if err != nil {
			t.Fatalf("the re-run failed: %v", err) // the store is healthy: a record is no reason to fail
		}
		if got, stored := mem.Object("b", "k"); !stored || !bytes.Equal(got, data) || res.Size != int64(len(data)) {
			t.Fatalf("the re-run reported %d bytes landed; the key holds %d (stored %v), not the %d source bytes", res.Size, len(got), stored, len(data))
		}
		if _, err := writer.Recover(ctx, mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1}); err != nil {
			t.Fatalf("Recover over a corrupt record: %v", err)
		}
		if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) {
			t.Fatalf("after Recover the key holds %d bytes, not the source's", len(got))
		}
	})
}

func listedPart(t *testing.T, st store.Store, uploadID string, n int32) *store.Part {
	t.Helper()
	out, err := st.ListParts(context.Background(), &store.ListPartsInput{Bucket: "b", Key: "k", UploadID: uploadID})
	if err != nil {
		return nil
	}
	for i := range out.Parts {
		if out.Parts[i].PartNumber == n {
			return &out.Parts[i]
		}
	}
	return nil
}

// recordFile is the journal's one record file.
func recordFile(t *testing.T, j *journal.Dir) string {
	t.Helper()
	entries, err := os.ReadDir(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			return filepath.Join(j.Path(), e.Name())
		}
	}
	t.Fatal("no record file in the journal")
	return ""
}

// corrupt truncates text (op 0) or overwrites it at a position (op 1) as raw says.
func corrupt(text, raw []byte) []byte {
	if len(raw) < 2 {
		return text
	}
	at := int(raw[1]) * len(text) / 256
	if raw[0]%2 == 0 {
		return text[:at]
	}
	out := append([]byte(nil), text[:at]...)
	out = append(out, raw[2:]...)
	if at+len(raw[2:]) < len(text) {
		out = append(out, text[at+len(raw[2:]):]...)
	}
	return out
}
