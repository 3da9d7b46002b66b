package writer_test

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// prefixBlind plays a store that ignores the prefix of ListMultipartUploads and lists every
// incomplete upload of the bucket.
type prefixBlind struct{ store.Store }

func (s prefixBlind) ListMultipartUploads(ctx context.Context, in *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	c := *in
	c.Prefix = ""
	return s.Store.ListMultipartUploads(ctx, &c)
}

// byIDOnly plays a store that finds an upload by its id alone, whatever key a ListParts or an
// abort names, so only the writer's own check keeps it off another key's upload.
type byIDOnly struct {
	store.Store
	mem *memstore.Store
}

func (s byIDOnly) keyOf(bucket, id, key string) string {
	for _, u := range s.mem.Uploads(bucket) {
		if u.UploadID == id {
			return u.Key
		}
	}
	return key
}

func (s byIDOnly) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	c := *in
	c.Key = s.keyOf(in.Bucket, in.UploadID, in.Key)
	return s.Store.ListParts(ctx, &c)
}

func (s byIDOnly) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	c := *in
	c.Key = s.keyOf(in.Bucket, in.UploadID, in.Key)
	return s.Store.AbortMultipartUpload(ctx, &c)
}

// The look for the upload a lost CreateMultipartUpload answer left aborts only an upload of the
// write's own key, whatever the listing returns: on a store that ignores the prefix, uploads of
// other keys started at the same moment with no parts (one whose key extends the write's, one
// unrelated) are left alone, even where the store would abort them by id alone, and the lost
// create's upload is aborted.
func TestLostCreateSweepStaysOnItsKey(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.WithBuckets("b"))
	for _, key := range []string{"k2", "zzz-unrelated.bin"} {
		if _, err := mem.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "b", Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	st := prefixBlind{byIDOnly{faulty.New(mem, faulty.First("CreateMultipartUpload", 1, faulty.DropResponse())), mem}}
	data := make([]byte, 3*part+5)
	res, err := writer.Upload(ctx, st, "b", "k", bytes.NewReader(data), func(o *writer.Options) {
		o.Profile = "min=1MiB"
		o.PartSize = part
		o.Retry = fastPolicy()
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) || len(res.LeftBehind) != 0 || res.MaybeLeftBehind {
		t.Fatalf("landed %d bytes, LeftBehind %v, maybe %v; want the source, nothing left", len(got), res.LeftBehind, res.MaybeLeftBehind)
	}
	var left []string
	for _, u := range mem.Uploads("b") {
		left = append(left, u.Key)
	}
	sort.Strings(left)
	if got := strings.Join(left, " "); got != "k2 zzz-unrelated.bin" {
		t.Errorf("incomplete uploads: %q; want the other keys' two, and the lost create's aborted", got)
	}
}
