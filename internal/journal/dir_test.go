package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func testID(upload string) ID {
	return ID{Endpoint: "http://127.0.0.1:7070", Bucket: "b", Key: "dir/key.bin", UploadID: upload}
}

func TestRecordLifecycle(t *testing.T) {
	d, err := Create(filepath.Join(t.TempDir(), "j"))
	if err != nil {
		t.Fatal(err)
	}
	id := testID("u1")
	if err := d.Begin(Record{ID: id, PartSize: 5 << 20, SourceSize: 11 << 20, ChecksumAlgorithm: "CRC64NVME"}); err != nil {
		t.Fatal(err)
	}
	// Parts finish concurrently: every one must be in the record.
	var wg sync.WaitGroup
	for n := int32(1); n <= 20; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.AddPart(id, Part{Number: n, Size: 5 << 20, Checksum: "c", ETag: fmt.Sprint("e", n)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := d.Intend(id, Object{Size: 100, ChecksumAlgorithm: "CRC64NVME", Checksum: "x"}); err != nil {
		t.Fatal(err)
	}
	// A second Dir on the same directory reads what the first wrote (as a restarted process).
	other, err := Open(d.Path())
	if err != nil {
		t.Fatal(err)
	}
	recs, problems, err := other.List()
	if err != nil || len(problems) != 0 || len(recs) != 1 {
		t.Fatalf("List = %d records, problems %v, err %v", len(recs), problems, err)
	}
	r := recs[0]
	if r.ID != id || len(r.Parts) != 20 || r.Parts[0].Number != 1 || r.Parts[19].Number != 20 || r.Object == nil || r.Object.Size != 100 {
		t.Fatalf("record read back = %+v", r)
	}
	// The first Dir holds the claim: nobody else may take it.
	if _, err := other.Claim(id); !errors.Is(err, ErrInUse) {
		t.Fatalf("Claim of a held record = %v, want ErrInUse", err)
	}
	if err := d.Release(id); err != nil {
		t.Fatal(err)
	}
	got, err := other.Claim(id)
	if err != nil || len(got.Parts) != 20 {
		t.Fatalf("Claim after Release = %d parts, %v", len(got.Parts), err)
	}
	if err := other.Remove(id); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(d.Path())
	if len(left) != 0 {
		t.Fatalf("files left after Remove: %v", left)
	}
	if _, err := other.Claim(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Claim of a removed record = %v, want ErrNotFound", err)
	}
}

func TestChangesNeedTheClaim(t *testing.T) {
	d, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := testID("u2")
	if err := d.AddPart(id, Part{Number: 1, Size: 1, ETag: "e"}); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("AddPart without claim = %v", err)
	}
	if err := d.Remove(id); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("Remove without claim = %v", err)
	}
	if err := d.Begin(Record{ID: ID{Bucket: "b", Key: "k", UploadID: "u"}, PartSize: 1}); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("Begin without endpoint = %v", err)
	}
}

// Bad files are reported by name and never returned as records.
func TestListSkipsBadFiles(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	good := testID("good")
	if err := d.Begin(Record{ID: good, PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, name(good)+recordExt))
	if err != nil {
		t.Fatal(err)
	}
	write := func(base string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, base), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name(testID("trunc"))+recordExt, data[:len(data)/2]) // torn by hand
	write("notes.txt", []byte("hello"))                        // foreign
	write(name(testID("copied"))+recordExt, data)              // content names another file
	write(name(testID("v9"))+recordExt, []byte(strings.Replace(string(data), `"version": 1`, `"version": 9`, 1)))
	write(".tmp-"+name(good)+"-123", data[:3]) // a crash mid-write: ignored
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	recs, problems, err := d.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != good {
		t.Fatalf("records = %+v, want only the good one", recs)
	}
	if len(problems) != 5 {
		t.Fatalf("problems = %v, want 5 (truncated, foreign, copied, version, directory)", problems)
	}
	for _, p := range problems {
		if p.Path == "" || p.Err == nil {
			t.Fatalf("problem without a path or reason: %+v", p)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Open of a missing directory succeeded")
	}
}
