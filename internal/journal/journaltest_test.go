package journal

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/safeput/safeput/storetest/journaltest"
)

// TestJournaltestAgrees: the tests of other modules read and plant journal records through
// storetest/journaltest, which knows the files on its own (other modules may not import this
// package). Each must read what the other writes, every field alike, under the same file name,
// and call the same files problems; a field added here and not there fails the comparison.
func TestJournaltestAgrees(t *testing.T) {
	full := func(upload string) journaltest.Record {
		return journaltest.Record{
			ID:       journaltest.ID{Endpoint: "http://127.0.0.1:7070", Bucket: "b", Key: "dir/key.bin", UploadID: upload},
			PartSize: 5 << 20, SourceSize: 11 << 20, ChecksumAlgorithm: "CRC32C",
			Parts: []journaltest.Part{
				{Number: 1, Size: 5 << 20, Checksum: "AAAAAA==", MD5: "d41d8cd98f00b204e9800998ecf8427e", ETag: "e1"},
				{Number: 2, Size: 5 << 20, ETag: "e2"},
			},
			Object: &journaltest.Object{Size: 11 << 20, ChecksumAlgorithm: "CRC32C", Checksum: "BBBBBB==", ETag: "x-2"},
			SSE:    "SSE-C", SSECustomerKeyMD5: "a2V5bWQ1",
		}
	}

	t.Run("the same fields", func(t *testing.T) {
		for _, pair := range [][2]any{{Record{}, journaltest.Record{}}, {ID{}, journaltest.ID{}}, {Part{}, journaltest.Part{}}, {Object{}, journaltest.Object{}}} {
			ours, theirs := fields(reflect.TypeOf(pair[0])), fields(reflect.TypeOf(pair[1]))
			if !reflect.DeepEqual(ours, theirs) {
				t.Errorf("%T has fields %v, journaltest's %v", pair[0], ours, theirs)
			}
		}
	})

	t.Run("planted, then read and claimed here", func(t *testing.T) {
		dir := t.TempDir()
		jt, err := journaltest.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		planted := full("u1")
		placeholder := journaltest.Record{ID: journaltest.ID{Endpoint: "e", Bucket: "b", Key: "k", UploadID: CreatingPrefix + "x"},
			PartSize: 8 << 20, SourceSize: -1, Creating: true}
		for _, r := range []journaltest.Record{planted, placeholder} {
			if err := jt.Plant(r); err != nil {
				t.Fatal(err)
			}
		}
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		recs, problems, err := d.List()
		if err != nil || len(problems) != 0 || len(recs) != 2 {
			t.Fatalf("List of planted records: %d records, problems %v, %v; want 2 and none", len(recs), problems, err)
		}
		want, _, err := jt.List()
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, want)
		// A planted record is held by nobody: the journal claims it under the name it gave it.
		rec, err := d.Claim(ID(planted.ID))
		if err != nil {
			t.Fatalf("Claim of a planted record: %v", err)
		}
		if len(rec.Parts) != 2 || rec.Object == nil || rec.SSE != "SSE-C" {
			t.Fatalf("claimed record %+v", rec)
		}
		if err := d.Release(ID(planted.ID)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("written here, then read there", func(t *testing.T) {
		dir := t.TempDir()
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		id := testID("u2")
		if err := d.Begin(Record{ID: id, PartSize: 5 << 20, SourceSize: 11 << 20, ChecksumAlgorithm: "CRC32C", SSE: "aws:kms"}); err != nil {
			t.Fatal(err)
		}
		if err := d.AddPart(id, Part{Number: 1, Size: 5 << 20, Checksum: "AAAAAA==", ETag: "e1"}); err != nil {
			t.Fatal(err)
		}
		if err := d.Intend(id, Object{Size: 11 << 20, ChecksumAlgorithm: "CRC32C", Checksum: "BBBBBB=="}); err != nil {
			t.Fatal(err)
		}
		// Held: its lock file is in the directory beside the record, and is no problem.
		if err := os.WriteFile(filepath.Join(dir, "notes.json"), []byte(`{"version": 1`), 0o600); err != nil {
			t.Fatal(err)
		}
		jt, err := journaltest.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, problems, err := jt.List()
		if err != nil || len(got) != 1 || len(problems) != 1 || problems[0].Path != filepath.Join(dir, "notes.json") {
			t.Fatalf("journaltest's List: %d records, problems %v, %v; want 1, and notes.json a problem", len(got), problems, err)
		}
		recs, ours, _ := d.List()
		if len(ours) != 1 || ours[0].Path != problems[0].Path {
			t.Fatalf("the journal's problems %v, journaltest's %v", ours, problems)
		}
		sameRecords(t, recs, got)
		if err := d.Release(id); err != nil {
			t.Fatal(err)
		}
	})
}

// sameRecords fails unless both lists hold the same records, compared as the JSON each side
// would write: a field one side lacks shows as a difference.
func sameRecords(t *testing.T, ours []Record, theirs []journaltest.Record) {
	t.Helper()
	a, err := json.Marshal(ours)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("the records differ:\ninternal/journal: %s\njournaltest:      %s", a, b)
	}
}

// fields lists a struct's fields as name, kind and tag.
func fields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		out = append(out, f.Name+" "+f.Type.Kind().String()+" "+string(f.Tag))
	}
	return out
}
