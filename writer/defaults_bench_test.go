package writer_test

import (
	"cmp"
	"context"
	"crypto/md5" //nolint:gosec // the store's ETags are MD5s, as S3's
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parrotStore keeps nothing: it reads each body to the end and answers as a real store would,
// doing as little as it can, so a benchmark's CPU is the writer's. echo: it echoes the checksum
// sent on each receipt, its HEAD reports the full-object checksum the Complete named, and it
// refuses a part whose checksum is wrong (MinIO, the gateway); it checks only bodies of up to
// 1 KiB (the writer's checksum probe's part, in an upload of its own), which answers the writer as checking every body would,
// without the store's CRCs in the figure; a PUT's ETag is still its body's MD5 (as MinIO's and
// the gateway's are). Otherwise it ignores checksum headers and its ETags are the parts' MD5s and
// MD5-of-MD5s-N (Ceph RGW 16.2). The MD5s it computes are in the figure, the same before and
// after any change of the writer.
type parrotStore struct {
	echo bool

	mu      sync.Mutex
	uploads map[string]map[int32]store.Part // by upload id: the write's, and the checksum probe's own
	created int
	head    store.HeadObjectOutput
}

// drain reads r to the end; it returns the body when it is small (echo: for the checksum check).
// The body's MD5 is taken when the store makes MD5 ETags of it (md5ETag).
func (s *parrotStore) drain(r io.Reader, md5ETag bool) (int64, [md5.Size]byte, []byte, error) {
	var sum [md5.Size]byte
	if !md5ETag {
		small := make([]byte, 1<<10+1)
		n, err := io.ReadFull(r, small)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return int64(n), sum, small[:n], nil
		}
		if err != nil {
			return int64(n), sum, nil, err
		}
		m, err := io.Copy(io.Discard, r)
		return int64(n) + m, sum, nil, err
	}
	h := md5.New() //nolint:gosec // see import
	n, err := io.Copy(h, r)
	copy(sum[:], h.Sum(nil))
	return n, sum, nil, err
}

func (s *parrotStore) PutObject(_ context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	// A PUT's ETag is the MD5 of its body, echoing or not (MinIO, the gateway and Ceph RGW make
	// them so).
	n, sum, _, err := s.drain(in.Body, true)
	if err != nil {
		return nil, err
	}
	out := &store.PutObjectOutput{ETag: `"` + hex.EncodeToString(sum[:]) + `"`}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.head = store.HeadObjectOutput{Size: n, ETag: out.ETag}
	if s.echo {
		out.Checksums = echoed(in.Checksum)
		s.head.Checksums = out.Checksums
	}
	return out, nil
}

func echoed(c store.Checksum) store.Checksums {
	switch c.Algorithm {
	case store.ChecksumCRC64NVME:
		return store.Checksums{CRC64NVME: c.Value}
	case store.ChecksumCRC32C:
		return store.Checksums{CRC32C: c.Value}
	case store.ChecksumCRC32:
		return store.Checksums{CRC32: c.Value}
	}
	return store.Checksums{}
}

func (s *parrotStore) CreateMultipartUpload(context.Context, *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.uploads == nil {
		s.uploads = map[string]map[int32]store.Part{}
	}
	s.created++
	id := fmt.Sprint("parrot-", s.created)
	s.uploads[id] = map[int32]store.Part{}
	return &store.CreateMultipartUploadOutput{UploadID: id}, nil
}

func (s *parrotStore) UploadPart(_ context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	n, sum, small, err := s.drain(in.Body, !s.echo)
	if err != nil {
		return nil, err
	}
	out := &store.UploadPartOutput{ETag: `"` + hex.EncodeToString(sum[:]) + `"`}
	if s.echo && small != nil && !in.Checksum.IsZero() {
		if got, _ := integrity.Sum(in.Checksum.Algorithm, small); got != in.Checksum.Value {
			return nil, &store.ResponseError{Op: "UploadPart", StatusCode: 400, Code: "BadDigest", Message: "The checksum did not match."}
		}
	}
	if s.echo {
		out.ETag = fmt.Sprintf(`"part-%d"`, in.PartNumber)
		out.Checksums = echoed(in.Checksum)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if parts := s.uploads[in.UploadID]; parts != nil {
		parts[in.PartNumber] = store.Part{PartNumber: in.PartNumber, Size: n, ETag: out.ETag, Checksums: out.Checksums}
	}
	return out, nil
}

func (s *parrotStore) ListParts(_ context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &store.ListPartsOutput{}
	for _, p := range s.uploads[in.UploadID] {
		out.Parts = append(out.Parts, p)
	}
	slices.SortFunc(out.Parts, func(a, b store.Part) int { return cmp.Compare(a.PartNumber, b.PartNumber) })
	return out, nil
}

func (s *parrotStore) CompleteMultipartUpload(_ context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var size int64
	md5s := make([][md5.Size]byte, 0, len(in.Parts))
	parts := s.uploads[in.UploadID]
	delete(s.uploads, in.UploadID)
	for _, p := range in.Parts {
		size += parts[p.PartNumber].Size
		e, _ := integrity.ParseETag(parts[p.PartNumber].ETag)
		var sum [md5.Size]byte
		_, _ = hex.Decode(sum[:], []byte(e.Hex))
		md5s = append(md5s, sum)
	}
	s.head = store.HeadObjectOutput{Size: size, ETag: `"` + integrity.MultipartETag(md5s) + `"`}
	if s.echo {
		s.head.ETag = `"parrot-object"`
		s.head.Checksums = echoed(in.FullObjectChecksum)
	}
	return &store.CompleteMultipartUploadOutput{ETag: s.head.ETag}, nil
}

func (s *parrotStore) AbortMultipartUpload(_ context.Context, in *store.AbortMultipartUploadInput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uploads, in.UploadID)
	return nil
}

func (s *parrotStore) HeadObject(context.Context, *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.head
	return &h, nil
}

func (s *parrotStore) GetObject(context.Context, *store.GetObjectInput) (*store.GetObjectOutput, error) {
	return nil, &store.ResponseError{StatusCode: 501, Code: "NotImplemented", Message: "the parrot keeps no bytes"}
}

func (s *parrotStore) DeleteObject(context.Context, *store.DeleteObjectInput) error { return nil }

func (s *parrotStore) ListMultipartUploads(context.Context, *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	return &store.ListMultipartUploadsOutput{}, nil
}

// BenchmarkDefaultsHashing is the writer's CPU per GiB of a 256 MiB stream written at defaults
// (no profile, 16 MiB × 4) to a store that keeps nothing (parrotStore), as MinIO and the gateway
// answer (echoing: the checksum echoed and reported by HEAD) and as Ceph RGW 16.2 answers
// (ignoring: MD5 ETags only, whose MD5s the store computes in this process too): through a fresh
// Uploader per write (the CLI: one write per process) and through one shared Uploader (a
// program's later writes). Compare runs with benchstat:
//
//	go test -run '^$' -bench BenchmarkDefaultsHashing -count 6 ./writer/ > new.txt; benchstat old.txt new.txt
func BenchmarkDefaultsHashing(b *testing.B) {
	const size = 256 << 20
	for _, echo := range []bool{true, false} {
		for _, shared := range []bool{false, true} {
			name := map[bool]string{true: "echoing", false: "ignoring"}[echo] + map[bool]string{false: "/fresh-uploader", true: "/shared-uploader"}[shared]
			b.Run(name, func(b *testing.B) {
				st := &parrotStore{echo: echo}
				var u *writer.Uploader
				if shared {
					u = benchUploader(b, st)
					// The shared Uploader's first write has taught it the endpoint.
					if _, err := u.Upload(context.Background(), "b", "k", newGen(size)); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(size)
				b.ResetTimer()
				start := processCPU(b)
				for b.Loop() {
					up := u
					if up == nil {
						up = benchUploader(b, st)
					}
					res, err := up.Upload(context.Background(), "b", "k", newGen(size))
					if err != nil {
						b.Fatal(err)
					}
					if !res.VerifiedStrong {
						b.Fatalf("verified %s", res.Verified)
					}
				}
				spent := processCPU(b) - start
				b.ReportMetric(float64(spent.Milliseconds())/(float64(size)*float64(b.N)/(1<<30)), "cpu-ms/GiB")
			})
		}
	}
}

func benchUploader(b *testing.B, st store.Store) *writer.Uploader {
	u, err := writer.NewUploader(st)
	if err != nil {
		b.Fatal(err)
	}
	return u
}
