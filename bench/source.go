package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/crc64nvme"
)

// DataFile is a generated source file and the CRC64NVME of its bytes.
type DataFile struct {
	Path string
	Size int64
	CRC  uint64
}

// Generate writes size bytes of non-compressible data (a ChaCha8 stream, seeded by the size so
// reruns upload the same bytes) to dir and returns its CRC.
//
// The source lives in a file rather than in memory so that an upload's peak RSS is what the
// uploader holds, not the source: read(2) from a file (on tmpfs, the page cache) does not count
// towards the reader's RSS.
func Generate(dir string, size int64) (DataFile, error) {
	path := filepath.Join(dir, fmt.Sprintf("source-%d.bin", size))
	f, err := os.Create(path)
	if err != nil {
		return DataFile{}, err
	}
	var seed [32]byte
	seed[0], seed[1], seed[2], seed[3] = byte(size), byte(size>>8), byte(size>>16), byte(size>>24)
	rng := rand.NewChaCha8(seed)
	h := crc64nvme.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	if _, err := io.CopyN(w, rng, size); err != nil {
		_ = f.Close()
		return DataFile{}, err
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return DataFile{}, err
	}
	if err := f.Close(); err != nil {
		return DataFile{}, err
	}
	return DataFile{Path: path, Size: size, CRC: h.Sum64()}, nil
}

// Open opens the data file as the given kind of source. The caller closes the returned closer.
func Open(path string, size int64, kind string) (Source, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return Source{}, nil, err
	}
	switch kind {
	case SourceStream:
		// Hides Seek, ReadAt and Stat: every uploader sees a pipe-like stream of unknown size.
		return Source{Kind: kind, Reader: struct{ io.Reader }{f}, Size: size, Path: path}, f, nil
	case SourceReaderAt:
		return Source{Kind: kind, Reader: io.NewSectionReader(f, 0, size), Size: size, Path: path}, f, nil
	}
	_ = f.Close()
	return Source{}, nil, fmt.Errorf("unknown source kind %q (want %s or %s)", kind, SourceStream, SourceReaderAt)
}

// ErrMismatch marks a read-back that differs from the source.
var ErrMismatch = errors.New("read-back differs from the source")

// CheckObject reads bucket/key back with a plain client and compares its length and CRC64NVME
// with the source's. A difference wraps ErrMismatch.
func CheckObject(ctx context.Context, c *s3.Client, bucket, key string, want DataFile) error {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("read back %s: %w", key, err)
	}
	defer out.Body.Close()
	h := crc64nvme.New()
	n, err := io.CopyBuffer(h, out.Body, make([]byte, 1<<20))
	if err != nil {
		return fmt.Errorf("read back %s: %w", key, err)
	}
	if n != want.Size || h.Sum64() != want.CRC {
		return fmt.Errorf("%w: %s has %d bytes, crc64nvme %016x; source has %d bytes, %016x", ErrMismatch, key, n, h.Sum64(), want.Size, want.CRC)
	}
	return nil
}
