package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// An Uploader is made once per store and shared by every write to it, from any goroutine: its
// writes share one retry policy (and budget), one memory budget and what they learned about the
// store.
func ExampleUploader() {
	st := memstore.New(memstore.WithBuckets("logs"))
	budget, err := writer.NewBudget(64 << 20) // part buffers of all its writes together
	if err != nil {
		fmt.Println(err)
		return
	}
	u, err := writer.NewUploader(st, func(o *writer.Options) { o.Profile = "minio"; o.MemoryBudget = budget })
	if err != nil {
		fmt.Println("bad configuration:", err)
		return
	}
	ctx := context.Background()

	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if _, err := u.Upload(ctx, "logs", fmt.Sprintf("day-%d.log", i), strings.NewReader("a day of logs\n")); err != nil {
				fmt.Println("not landed:", sperrors.KindOf(err))
			}
		})
	}
	wg.Wait()

	w, err := u.New(ctx, "logs", "stream.log", func(o *writer.Options) { o.ContentType = "text/plain" }) // a write's own options
	if err != nil {
		fmt.Println("bad configuration:", err)
		return
	}
	fmt.Fprintln(w, "streamed")
	if err := w.Close(); err != nil {
		fmt.Println("not landed:", sperrors.KindOf(err))
		return
	}
	_, landed := st.Object("logs", "day-2.log")
	fmt.Println(landed, w.Result().Size, "bytes,", w.Result().Verified, "verified")
	// Output: true 9 bytes, crc32c verified
}

// With a journal, an Uploader records every multipart upload, so a run that died mid-write
// leaves what the next run's Recover needs to settle it: abort the upload, or confirm that its
// Complete had landed.
func ExampleUploader_Recover() {
	dir, err := os.MkdirTemp("", "safeput-journal")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	j, err := journal.Create(filepath.Join(dir, "journal"))
	if err != nil {
		fmt.Println(err)
		return
	}
	const endpoint = "mem://example" // names the store in the journal's records
	ctx := context.Background()
	mem := memstore.New(memstore.WithBuckets("b"))

	// A run that dies after its first part: here the store refuses the second part and the abort.
	dying := faulty.New(mem,
		faulty.Rule{Op: faulty.OpUploadPart, Part: 2, Fault: faulty.Forbidden()},
		faulty.Always("AbortMultipartUpload", faulty.Forbidden()))
	lost, err := writer.NewUploader(dying, func(o *writer.Options) {
		o.JournalDir, o.JournalEndpoint = j.Path(), endpoint
		o.Profile = "minio"
		o.PartSize = 5 << 20
		o.Concurrency = 1
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = lost.Upload(ctx, "b", "big", bytes.NewReader(make([]byte, 12<<20)))
	fmt.Println("write failed:", err != nil, "- uploads left:", len(mem.Uploads("b")))

	// The next run recovers first, through its own Uploader on the same journal.
	u, err := writer.NewUploader(mem, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = j.Path(), endpoint })
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := u.Recover(ctx, writer.RecoverOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Counts[writer.RecoverAborted], "aborted - uploads left:", len(mem.Uploads("b")))
	// Output:
	// write failed: true - uploads left: 1
	// 1 aborted - uploads left: 0
}

// Example_readme is the sketch of the README's Use section, compiled (not run: it needs a
// server) so the README cannot drift from the API.
func Example_readme() {
	ctx := context.Background()
	key, secret := os.Getenv("S3_ACCESS_KEY"), os.Getenv("S3_SECRET_KEY")
	var src io.Reader = strings.NewReader("...")
	buf := []byte("...")
	// --- README ---
	st, err := awss3.New(awss3.Config{Endpoint: "https://s3.example.com", Region: "us-east-1",
		AccessKey: key, SecretKey: secret, PathStyle: true})
	if err != nil {
		return // a bad endpoint or region
	}
	// One Uploader per store, for the life of the process; safe for concurrent use.
	up, err := writer.NewUploader(st, func(o *writer.Options) {
		o.Profile = "minio" // the store's multipart rules; the default, "strict", suits every store
	})
	if err != nil {
		return // an unknown profile, a bad setting
	}

	// A stream (a Parquet writer's sink, say): Write never touches the network for a small write.
	w, err := up.New(ctx, "bucket", "segments/42.parquet")
	if err != nil {
		return
	}
	if _, err := io.Copy(w, src); err != nil { // or pqarrow.NewFileWriter(schema, w, ...)
		_ = w.Abort(ctx) // or Close: it returns the same sticky error and aborts the upload
		return
	}
	if err := w.Close(); err != nil { // nil only when the object landed, verified
		return // classified: see Errors
	}
	res := w.Result() // size, ETag, checksum, parts, bytes sent, failures by kind, how it was verified
	fmt.Println(res.Size, res.Verified)

	// A reader: uses what it offers (a known size, io.ReaderAt for part uploads with no copy,
	// io.Seeker to replay the whole upload after a failed verification).
	res, err = up.Upload(ctx, "bucket", "segments/43.bin", bytes.NewReader(buf),
		func(o *writer.Options) { o.CreateOnly = true }) // for a key that must not exist: an overwrite is then Precondition
	// --- end ---
	_, _ = res, err
}

// TestUploaderSharesItsPolicy: the writes of one Uploader run on one retry policy (so one retry
// budget); two Uploaders, and two shorthand writes, do not share one; Options.Retry set for the
// Uploader or for one write is the one used.
func TestUploaderSharesItsPolicy(t *testing.T) {
	st := memstore.New(memstore.WithBuckets(unitBucket))
	ctx := context.Background()
	policyOf := func(newWriter func() (*writer.Writer, error)) *retry.Policy {
		t.Helper()
		w, err := newWriter()
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Abort(ctx) }()
		return writer.PolicyOf(w)
	}
	u1, u2 := newUploader(t, st), newUploader(t, st)
	a := policyOf(func() (*writer.Writer, error) { return u1.New(ctx, unitBucket, "a") })
	b := policyOf(func() (*writer.Writer, error) { return u1.New(ctx, unitBucket, "b") })
	c := policyOf(func() (*writer.Writer, error) { return u2.New(ctx, unitBucket, "c") })
	if a == nil || a != b {
		t.Fatal("two writes of one Uploader run on different retry policies")
	}
	if c == a {
		t.Fatal("two Uploaders share a retry policy")
	}
	s1 := policyOf(func() (*writer.Writer, error) { return writer.New(ctx, st, unitBucket, "s1") })
	s2 := policyOf(func() (*writer.Writer, error) { return writer.New(ctx, st, unitBucket, "s2") })
	if s1 == s2 || s1 == a {
		t.Fatal("shorthand writes share a retry policy")
	}

	mine, own := retry.New(), retry.New()
	u3 := newUploader(t, st, func(o *writer.Options) { o.Retry = mine })
	if p := policyOf(func() (*writer.Writer, error) { return u3.New(ctx, unitBucket, "d") }); p != mine {
		t.Fatal("the Uploader's Options.Retry policy is not used")
	}
	if p := policyOf(func() (*writer.Writer, error) {
		return u3.New(ctx, unitBucket, "e", func(o *writer.Options) { o.Retry = own })
	}); p != own {
		t.Fatal("a write's own Options.Retry policy is not used")
	}
	if p := policyOf(func() (*writer.Writer, error) {
		return u3.New(ctx, unitBucket, "f", func(o *writer.Options) { o.Retry = nil })
	}); p != mine {
		t.Fatal("Options.Retry nil for one write does not fall back to the Uploader's policy")
	}
}

// TestUploaderSharesItsBudget: the Uploader's memory budget bounds its writes together: a write
// that would need more than the whole budget is refused, as with Options.MemoryBudget per write.
func TestUploaderSharesItsBudget(t *testing.T) {
	budget, err := writer.NewBudget(10 * mib)
	if err != nil {
		t.Fatal(err)
	}
	u := newUploader(t, newMem(memstore.Rules{}), func(o *writer.Options) { o.MemoryBudget = budget; o.Profile = "minio"; o.PartSize = 5 * mib })
	data := randomBytes(t, largeSize)
	for i := range 2 {
		if _, err := writeWith(t, u, fmt.Sprint("k", i), data, func(o *writer.Options) { o.Concurrency = 2 }); err != nil {
			t.Fatal(err)
		}
	}
	if budget.Peak() > budget.Limit() || budget.Peak() == 0 {
		t.Fatalf("peak %d with a limit of %d: the writes did not draw on the Uploader's budget", budget.Peak(), budget.Limit())
	}
	if _, err := u.New(context.Background(), unitBucket, "big", func(o *writer.Options) { o.Concurrency = 3 }); sperrors.KindOf(err) != sperrors.Permanent {
		t.Fatalf("a write needing 15 MiB of a 10 MiB budget: err %v, want Permanent", err)
	}
}

// TestWriteOptionsStayTheWrites: a write's functions edit a copy of its Uploader's options, so
// one that changes a map in place (metadata) changes neither the Uploader's next write nor the
// caller's map; the Uploader's settings reach every write that does not override them.
func TestWriteOptionsStayTheWrites(t *testing.T) {
	mem := newMem(memstore.Rules{})
	callers := map[string]string{"team": "a"}
	u := newUploader(t, mem, func(o *writer.Options) { o.Metadata = callers; o.ContentType = "text/plain" })
	ctx := context.Background()
	if _, err := u.Upload(ctx, unitBucket, "first", strings.NewReader("1"), func(o *writer.Options) {
		o.Metadata["extra"] = "x"
		o.ContentType = "application/json"
	}); err != nil {
		t.Fatal(err)
	}
	callers["team"] = "changed after NewUploader"
	if _, err := u.Upload(ctx, unitBucket, "second", strings.NewReader("2")); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string][2]string{"first": {"application/json", "x"}, "second": {"text/plain", ""}} {
		head, err := mem.HeadObject(ctx, &store.HeadObjectInput{Bucket: unitBucket, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if head.ContentType != want[0] || head.Metadata["extra"] != want[1] || head.Metadata["team"] != "a" {
			t.Errorf("%s: Content-Type %q, metadata %v; want %q, extra %q, team \"a\"", key, head.ContentType, head.Metadata, want[0], want[1])
		}
	}
}

// TestNewUploaderRefuses: what no write could use fails at NewUploader, classified.
func TestNewUploaderRefuses(t *testing.T) {
	st := memstore.New()
	for name, c := range map[string]struct {
		st   *memstore.Store
		opts []func(*writer.Options)
	}{
		"nil store":       {nil, nil},
		"unknown profile": {st, []func(*writer.Options){func(o *writer.Options) { o.Profile = "nope" }}},
		"part size":       {st, []func(*writer.Options){func(o *writer.Options) { o.PartSize = 0 }}},
		"concurrency":     {st, []func(*writer.Options){func(o *writer.Options) { o.Concurrency = 0 }}},
		"checksum":        {st, []func(*writer.Options){func(o *writer.Options) { o.Checksum = "MD5" }}},
	} {
		var err error
		if c.st == nil {
			_, err = writer.NewUploader(nil, c.opts...)
		} else {
			_, err = writer.NewUploader(c.st, c.opts...)
		}
		if sperrors.KindOf(err) != sperrors.Permanent {
			t.Errorf("%s: err %v, want Permanent", name, err)
		}
	}
	u := newUploader(t, st)
	if _, err := u.Recover(context.Background(), writer.RecoverOptions{}); sperrors.KindOf(err) != sperrors.Permanent {
		t.Errorf("Recover without a journal: err %v, want Permanent", err)
	}
	var none *writer.Uploader // a field never set: an error, not a panic
	if _, err := none.New(context.Background(), "b", "k"); sperrors.KindOf(err) != sperrors.Permanent {
		t.Errorf("New on a nil Uploader: err %v, want Permanent", err)
	}
	if _, err := none.Upload(context.Background(), "b", "k", strings.NewReader("x")); sperrors.KindOf(err) != sperrors.Permanent {
		t.Errorf("Upload on a nil Uploader: err %v, want Permanent", err)
	}
	if _, err := none.Recover(context.Background(), writer.RecoverOptions{}); sperrors.KindOf(err) != sperrors.Permanent {
		t.Errorf("Recover on a nil Uploader: err %v, want Permanent", err)
	}
}

// TestReadmeSketchIsCompiled: the README's Use sketch (after its imports) is Example_readme's
// body between the markers, so the compiled example is the code the README shows.
func TestReadmeSketchIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, use, ok := strings.Cut(string(readme), "## Use\n\n```go\n")
	use, _, ok2 := strings.Cut(use, "```\n")
	_, sketch, ok3 := strings.Cut(use, ")\n\n") // after the import block
	src, err := os.ReadFile("uploader_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok4 := strings.Cut(string(src), "\t// --- README ---\n")
	body, _, ok5 := strings.Cut(body, "\t// --- end ---\n")
	if !ok || !ok2 || !ok3 || !ok4 || !ok5 {
		t.Fatal("the README's Use sketch or Example_readme's markers are missing")
	}
	var unindented []string
	for line := range strings.Lines(body) {
		unindented = append(unindented, strings.TrimPrefix(line, "\t"))
	}
	if got := strings.Join(unindented, ""); got != sketch {
		t.Fatalf("the README's Use sketch differs from Example_readme's body:\nREADME:\n%s\nExample_readme:\n%s", sketch, got)
	}
}
