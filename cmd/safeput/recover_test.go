package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/safeput/safeput/store"
	journal "github.com/safeput/safeput/storetest/journaltest"
	"github.com/safeput/safeput/storetest/s3test"
)

// What recover says about a journal with nothing to do, and about bad input: a clear message,
// the right exit code, and nothing touched. Records it must not act on (another endpoint,
// another bucket, a key outside its prefix: someone else's upload, well-formed) are reported
// with why and left, with their uploads, even with --run.
func TestRecoverMessages(t *testing.T) {
	s := s3test.Require(t)
	bucket := s3test.NewBucket(t, s)
	scope := "s3://" + bucket + "/mine/"
	dir := t.TempDir()
	r := cli(t, s, nil, "recover", "--journal", filepath.Join(dir, "missing"), scope)
	expectCode(t, r, 2, "recover of a missing directory")
	if !strings.Contains(r.stderr, "missing") {
		t.Errorf("stderr does not name the directory: %q", r.stderr)
	}
	r = cli(t, s, nil, "recover", scope)
	expectCode(t, r, 2, "recover without --journal")
	r = cli(t, s, nil, "recover", "--run", "--journal", dir)
	expectCode(t, r, 2, "recover without a scope")
	if !strings.Contains(r.stderr, "s3://bucket/prefix") {
		t.Errorf("stderr does not say a scope is needed: %q", r.stderr)
	}

	r = cli(t, s, nil, "recover", "--journal", dir, scope)
	expectCode(t, r, 0, "recover of an empty journal")
	if !strings.Contains(r.stdout, "holds no uploads: nothing to recover") {
		t.Errorf("stdout: %q", r.stdout)
	}
	// A foreign file is skipped with a warning naming it.
	junk := filepath.Join(dir, "notes.json")
	if err := os.WriteFile(junk, []byte(`{"version": 1, "bucket": "b"`), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := strings.TrimRight(s.Endpoint, "/")
	// Another team's upload, open on the server, and well-formed records naming it or others.
	openUpload(t, s, bucket, "keep/other-team/a.bin", 1000)
	theirs := s3test.IncompleteUploads(t, s, bucket, "keep/")
	if len(theirs) != 1 {
		t.Fatalf("uploads under keep/: %v", theirs)
	}
	_, theirID, _ := strings.Cut(theirs[0], "@")
	for _, id := range []journal.ID{
		{Endpoint: "http://elsewhere:9000", Bucket: bucket, Key: "mine/k", UploadID: "u"},
		{Endpoint: endpoint, Bucket: "someone-elses-bucket", Key: "mine/k", UploadID: "u"},
		{Endpoint: endpoint, Bucket: bucket, Key: "keep/other-team/a.bin", UploadID: theirID},
	} {
		if err := j.Plant(journal.Record{ID: id, PartSize: 5 << 20, SourceSize: 11 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	r = cli(t, s, nil, "recover", "--run", "--journal", dir, scope)
	expectCode(t, r, 0, "recover with a foreign file and records out of scope")
	if !strings.Contains(r.stderr, "warning: skipped "+junk) {
		t.Errorf("stderr does not name the skipped file: %q", r.stderr)
	}
	for _, want := range []string{"other-endpoint", "http://elsewhere:9000", "other-bucket", "someone-elses-bucket", "outside-prefix", `key "keep/other-team/a.bin" is not under prefix "mine/"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout does not report %q:\n%s", want, r.stdout)
		}
	}
	if recs, _, _ := j.List(); len(recs) != 3 {
		t.Fatalf("records after recover --run: %d, want the three out of scope kept", len(recs))
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 1 || ups[0] != theirs[0] {
		t.Fatalf("incomplete uploads after recover --run: %v, want the other team's %s kept", ups, theirs[0])
	}
	if _, err := os.Stat(junk); err != nil {
		t.Fatalf("the foreign file was touched: %v", err)
	}
	// --bucket alone is the whole bucket's scope: the other team's record is then in scope.
	r = cli(t, s, nil, "--json", "recover", "--journal", dir, "--bucket", bucket)
	expectCode(t, r, 0, "recover --bucket (dry run)")
	var out recoverJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Bucket != bucket || out.Prefix != "" {
		t.Fatalf("recover --json: %v\n%s", err, r.stdout)
	}
	if out.Counts["would-abort"] != 1 || out.Counts["other-endpoint"] != 1 || out.Counts["other-bucket"] != 1 {
		t.Errorf("dry run with --bucket: counts %v, want the in-bucket record would-abort", out.Counts)
	}
}

// A create whose answer was lost may leave an upload that no id names. When the look for it is
// refused, put says so (text and JSON), a sweep of the key lists it, and with --journal recover
// finds and aborts it.
func TestPutReportsWhatALostCreateMayHaveLeft(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s3test.ForEach(t, testLostCreate)
}

func testLostCreate(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	data := s3test.RandomBytes(6 << 20)
	file := writeFile(t, data)
	dir := filepath.Join(t.TempDir(), "journal")
	common := []string{"--provider", provider(s), "--part-size", "5MiB", "--fault", "CreateMultipartUpload:DropResponse:1,ListMultipartUploads:Forbidden"}
	r := cli(t, s, nil, append(common, "--json", "put", "--journal", dir, file, "s3://"+bucket+"/journaled")...)
	expectCode(t, r, 0, "journaled put")
	var res struct {
		MaybeLeftBehind bool     `json:"maybe_left_behind"`
		Notes           []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || !res.MaybeLeftBehind || len(res.Notes) == 0 {
		t.Fatalf("--json result %q (%v): want maybe_left_behind and a note", r.stdout, err)
	}
	r = cli(t, s, nil, append(common, "put", file, "s3://"+bucket+"/plain")...)
	expectCode(t, r, 0, "put")
	if !strings.Contains(r.stdout, "LEFT?") || !strings.Contains(r.stdout, "safeput sweep s3://"+bucket+"/plain") {
		t.Fatalf("put output does not say an upload may be left:\n%s", r.stdout)
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 2 {
		t.Fatalf("incomplete uploads %v: want the one each lost create left", ups)
	}
	r = cli(t, s, nil, "sweep", "s3://"+bucket+"/plain")
	expectCode(t, r, 0, "sweep (dry run)")
	r = cli(t, s, nil, "recover", "--journal", dir, "--run", "s3://"+bucket)
	expectCode(t, r, 0, "recover")
	ups := s3test.IncompleteUploads(t, s, bucket, "")
	if len(ups) != 1 || !strings.HasPrefix(ups[0], "plain@") {
		t.Fatalf("after recover: incomplete uploads %v; want only the unjournaled put's", ups)
	}
	r = cli(t, s, nil, "sweep", "--run", "s3://"+bucket+"/plain")
	expectCode(t, r, 0, "sweep")
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 0 {
		t.Fatalf("after the sweep: incomplete uploads %v", ups)
	}
	for _, key := range []string{"journaled", "plain"} {
		if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
			t.Fatalf("%s reads back %d bytes, not the %d written", key, len(got), len(data))
		}
	}
}

// A crashed write whose Complete may have landed, on a key whose HEAD cannot decide it (no
// checksum of the record's algorithm, no ETag to compare): recover reads the object back against
// the record's CRC and reports it landed; with --read-back-limit below its size it does not read
// it, reports it gone, and says what it left unproven.
func TestRecoverReadBackLimit(t *testing.T) { s3test.ForEach(t, testRecoverReadBackLimit) }

func testRecoverReadBackLimit(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	data := s3test.RandomBytes(64 << 10)
	if _, err := s.RawClient().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"),
		Body: bytes.NewReader(data), ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32}); err != nil {
		t.Fatal(err)
	}
	crc := checksumOf(store.ChecksumCRC32C, data)
	crashed := func(t *testing.T) string {
		dir := t.TempDir()
		j, err := journal.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		// The upload id names no upload: the crashed write's Complete consumed it, or it never was.
		id := journal.ID{Endpoint: strings.TrimRight(s.Endpoint, "/"), Bucket: bucket, Key: "k", UploadID: "completed-before-the-crash"}
		if err := j.Plant(journal.Record{ID: id, PartSize: 5 << 20, SourceSize: int64(len(data)), ChecksumAlgorithm: string(store.ChecksumCRC32C),
			Object: &journal.Object{Size: int64(len(data)), ChecksumAlgorithm: string(store.ChecksumCRC32C), Checksum: crc}}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	var out struct {
		Uploads []struct {
			Outcome string `json:"outcome"`
			Note    string `json:"note"`
		} `json:"uploads"`
	}
	for _, c := range []struct {
		limit   []string
		outcome string
		note    string
	}{
		{nil, "landed", ""},
		{[]string{"--read-back-limit", "32KiB"}, "gone", "larger than the read-back limit (32768 bytes)"},
		{[]string{"--read-back-limit", "0"}, "gone", "not read back"},
	} {
		t.Run(strings.Join(append([]string{"limit"}, c.limit...), " "), func(t *testing.T) {
			r := cli(t, s, nil, append([]string{"--json", "recover", "--run", "--journal", crashed(t), "s3://" + bucket}, c.limit...)...)
			expectCode(t, r, 0, "recover")
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Uploads) != 1 {
				t.Fatalf("recover --json: %v\n%s", err, r.stdout)
			}
			u := out.Uploads[0]
			if u.Outcome != c.outcome || (c.note == "") != (u.Note == "") || !strings.Contains(u.Note, c.note) {
				t.Errorf("outcome %q, note %q; want %q, a note saying %q", u.Outcome, u.Note, c.outcome, c.note)
			}
		})
	}
	if got := s3test.ReadAll(t, s, bucket, "k"); !bytes.Equal(got, data) {
		t.Error("recover changed the object")
	}
}
