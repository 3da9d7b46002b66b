package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// A ReaderAt source's part CRC comes from a pass over the part's section in pooled chunks; the
// store checks each part's checksum, so a wrong CRC fails the upload. Sizes that are no
// multiple of the pass's chunk, and a last part shorter than one chunk, cover its edges.
func TestSectionChecksumsLand(t *testing.T) {
	for _, alg := range []store.ChecksumAlgorithm{store.ChecksumCRC64NVME, store.ChecksumCRC32C, store.ChecksumCRC32} {
		for _, size := range []int{1, part + 1, 2*part + 12345, 3*part - 1} {
			t.Run(fmt.Sprintf("%s/%d", alg, size), func(t *testing.T) {
				mem := memstore.New(memstore.WithBuckets("b"))
				data := s3test.RandomBytes(size)
				res, err := writer.Upload(context.Background(), mem, "b", "k", bytes.NewReader(data),
					func(o *writer.Options) {
						o.Profile = "minio"
						o.PartSize = part
						o.Checksum = alg
						o.Retry = fastPolicy()
					})
				if err != nil {
					t.Fatal(err)
				}
				if res.Size != int64(size) {
					t.Fatalf("result size %d, want %d", res.Size, size)
				}
				if got, ok := mem.Object("b", "k"); !ok || !bytes.Equal(got, data) {
					t.Fatal("read back differs")
				}
			})
		}
	}
}

// shortReaderAt says it holds size bytes but ends after len(data).
type shortReaderAt struct {
	data []byte
	size int64
}

func (s shortReaderAt) Size() int64 { return s.size }
func (s shortReaderAt) Read(p []byte) (int, error) {
	return 0, errors.New("shortReaderAt: read by offset only")
}

func (s shortReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(s.data).ReadAt(p, off)
}

// A ReaderAt source that ends before its declared size fails the part whose end is missing,
// naming where the source ended, and leaves no upload behind.
func TestShortSectionNamesWhereItEnded(t *testing.T) {
	for _, alg := range []store.ChecksumAlgorithm{store.ChecksumCRC32C, store.ChecksumNone} {
		t.Run(string(alg), func(t *testing.T) {
			mem := memstore.New(memstore.WithBuckets("b"))
			data := s3test.RandomBytes(2*part + 1000)
			src := shortReaderAt{data: data, size: 3 * part}
			_, err := writer.Upload(context.Background(), mem, "b", "k", src,
				func(o *writer.Options) {
					o.Profile = "minio"
					o.PartSize = part
					o.Checksum, o.NoChecksum = alg, alg == store.ChecksumNone
					o.Retry = fastPolicy()
				})
			if err == nil {
				t.Fatal("a source shorter than its declared size landed")
			}
			if !errors.Is(err, sperrors.Permanent) {
				t.Errorf("error %v is not Permanent", err)
			}
			want := fmt.Sprintf("source ended at %d of part 3's %d bytes", 1000, part)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			if ups := mem.Uploads("b"); len(ups) != 0 {
				t.Errorf("uploads left: %+v", ups)
			}
		})
	}
}
