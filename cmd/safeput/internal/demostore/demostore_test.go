package demostore_test

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/safeput/safeput/cmd/safeput/internal/demostore"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest"
)

// The demo's store keeps the same contracts as the SDK adapters, so what the demo shows the
// writer doing is what it does against a store that keeps them.
func TestConforms(t *testing.T) { storetest.Run(t, harness{}) }

type harness struct{}

func (harness) MakeStores(*testing.T) (under, reference store.Store, bucket string) {
	st := demostore.New("bucket", 0)
	return st, st, "bucket"
}

func (harness) Capabilities() storetest.Capabilities {
	return storetest.Capabilities{ConditionalPut: true, ConditionalComplete: true, Checksums: true, MD5ETags: true, PagedUploadListing: true}
}

func put(st store.Store, key string, data []byte) (*store.PutObjectOutput, error) {
	return st.PutObject(context.Background(), &store.PutObjectInput{Bucket: "b", Key: key, Body: bytes.NewReader(data), ContentLength: int64(len(data))})
}

// Each fault plays what a store in the field answers: the answer and its class, what is kept,
// and on which calls.
func TestFaults(t *testing.T) {
	data := []byte("0123456789")
	st := demostore.New("b", 0,
		demostore.Rule{Op: "PutObject", Times: 2, Fault: demostore.SlowDown},
		demostore.Rule{Op: "HeadObject", Fault: demostore.Forbidden})
	for range 2 {
		if _, err := put(st, "k", data); sperrors.KindOf(err) != sperrors.Throttled {
			t.Errorf("SlowDown PutObject: %v, want a throttled error", err)
		}
	}
	if _, err := put(st, "k", data); err != nil {
		t.Fatalf("third PutObject: %v, want the store's answer", err)
	}
	if got, ok := st.Object("k"); !ok || !bytes.Equal(got, data) || st.Requests("PutObject") != 1 {
		t.Errorf("after two SlowDowns and a PUT: %q (%v), %d PUTs acted on; want the bytes once", got, ok, st.Requests("PutObject"))
	}
	var re *store.ResponseError
	if _, err := st.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "b", Key: "k"}); !errors.As(err, &re) || re.Code != "AccessDenied" {
		t.Errorf("Forbidden HeadObject: %v, want 403 AccessDenied", err)
	}
	if st.Count(demostore.SlowDown) != 2 || st.Count(demostore.Forbidden) != 1 {
		t.Errorf("injected: %s; want 2 SlowDown and 1 Forbidden", st.Injected())
	}

	// Truncate keeps half and says OK, echoing the checksum sent; the ETag is the MD5 of what it kept.
	st = demostore.New("b", 0, demostore.Rule{Op: "PutObject", Times: 1, Fault: demostore.Truncate})
	sum := store.Checksum{Algorithm: store.ChecksumCRC32, Value: base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(data)))}
	half := md5.Sum(data[:5]) //nolint:gosec // S3 ETags are MD5s
	out, err := st.PutObject(context.Background(), &store.PutObjectInput{Bucket: "b", Key: "t", Body: bytes.NewReader(data), ContentLength: int64(len(data)), Checksum: sum})
	if err != nil {
		t.Fatalf("truncated PutObject: %v, want success", err)
	}
	if got, _ := st.Object("t"); !bytes.Equal(got, data[:5]) || out.Checksums.Get(store.ChecksumCRC32) != sum.Value || out.ETag != hex.EncodeToString(half[:]) {
		t.Errorf("truncated PutObject kept %q, echoed %q with ETag %s; want the first half, the checksum sent, the half's MD5", got, out.Checksums.Get(store.ChecksumCRC32), out.ETag)
	}

	// A part rule hits only that part, so the write's other requests do not move it.
	st = demostore.New("b", 0, demostore.Rule{Op: "UploadPart", Part: 2, Times: 1, Fault: demostore.ChecksumMismatch})
	up, err := st.CreateMultipartUpload(context.Background(), &store.CreateMultipartUploadInput{Bucket: "b", Key: "m"})
	if err != nil {
		t.Fatal(err)
	}
	part := func(n int32) error {
		_, err := st.UploadPart(context.Background(), &store.UploadPartInput{Bucket: "b", Key: "m", UploadID: up.UploadID, PartNumber: n, Body: bytes.NewReader(data), ContentLength: int64(len(data))})
		return err
	}
	for _, c := range []struct {
		n    int32
		kind sperrors.Kind
	}{{1, sperrors.Unknown}, {1, sperrors.Unknown}, {2, sperrors.Integrity}, {2, sperrors.Unknown}} {
		if err := part(c.n); sperrors.KindOf(err) != c.kind {
			t.Errorf("UploadPart %d: %v, want kind %v", c.n, err, c.kind)
		}
	}
}
