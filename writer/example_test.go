package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// A Writer streams into one object; Close commits and verifies. Any store.Store works: here the
// in-memory one, in production store/awss3 or store/miniogo.
func ExampleNew() {
	st := memstore.New(memstore.WithBuckets("logs"))
	ctx := context.Background()

	w, err := writer.New(ctx, st, "logs", "2026/11/30/segment-0001.log")
	if err != nil {
		fmt.Println("bad configuration:", err)
		return
	}
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i) // no request is sent for a small write
	}
	if err := w.Close(); err != nil { // commit and verify: nil only when verified
		fmt.Println("not landed:", sperrors.KindOf(err))
		return
	}
	res := w.Result()
	// The PutObject's answer proved it (its ETag is the MD5 of the bytes sent): no HEAD.
	fmt.Println(res.Size, "bytes,", res.Verified, "verified by", res.VerifiedBy, "strong:", res.VerifiedStrong)
	// Output: 21 bytes, etag-md5 verified by PutObject strong: true
}

// Upload sends a reader; an io.ReaderAt of known size (a file, bytes.Reader) is sent part by
// part without buffering, and can be re-sent whole if verification fails.
func ExampleUpload() {
	st := memstore.New(memstore.WithBuckets("b"))
	data := bytes.Repeat([]byte("x"), 12<<20)
	res, err := writer.Upload(context.Background(), st, "b", "blob", bytes.NewReader(data),
		func(o *writer.Options) { o.Profile = "minio"; o.PartSize = 5 << 20 })
	if err != nil {
		fmt.Println("not landed:", err)
		return
	}
	fmt.Println(res.Multipart, res.Parts, "parts of", res.PartSize>>20, "MiB")
	// Output: true 3 parts of 5 MiB
}

// Abort cancels a write from any goroutine: the multipart upload is aborted and nothing is
// visible at the key.
func ExampleWriter_Abort() {
	st := memstore.New(memstore.WithBuckets("b"))
	w, _ := writer.New(context.Background(), st, "b", "k", func(o *writer.Options) { o.Profile = "minio"; o.PartSize = 5 << 20 })
	_, _ = w.Write(make([]byte, 11<<20)) // parts already on their way
	abortErr := w.Abort(context.Background())
	err := w.Close()
	_, exists := st.Object("b", "k")
	fmt.Println(abortErr, errors.Is(err, sperrors.Canceled), exists, len(st.Uploads("b")))
	// Output: <nil> true false 0
}

// One Budget shared by many writers bounds their part buffers together: a writer waits for
// room instead of allocating past the limit.
func ExampleNewBudget() {
	budget, err := writer.NewBudget(64 << 20) // 64 MiB for all writers
	if err != nil {
		fmt.Println(err)
		return
	}
	st := memstore.New(memstore.WithBuckets("b"))
	for i := range 4 {
		_, err := writer.Upload(context.Background(), st, "b", fmt.Sprint("k", i), strings.NewReader("data"),
			func(o *writer.Options) { o.MemoryBudget = budget; o.PartSize = 16 << 20; o.Concurrency = 2 })
		if err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("limit", budget.Limit()>>20, "MiB, peak within it:", budget.Peak() <= budget.Limit())
	// Output: limit 64 MiB, peak within it: true
}

// A failure is a classified error: the caller decides from its Kind, never from its text.
func ExampleUpload_classifiedError() {
	st := faulty.New(memstore.New(memstore.WithBuckets("b")), faulty.Always(faulty.OpPutObject, faulty.Forbidden()))
	_, err := writer.Upload(context.Background(), st, "b", "k", strings.NewReader("data"))
	var e *sperrors.Error
	if errors.As(err, &e) {
		fmt.Println(e.Kind.String(), e.Code, e.Attempts, e.Retryable())
	}
	// Output: permanent AccessDenied 1 false
}
