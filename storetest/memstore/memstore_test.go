package memstore

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // test vectors
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
)

const bkt = "bucket"

var ctx = context.Background()

// wantResp asserts err is a *store.ResponseError with the given status and code and a request id.
func wantResp(t *testing.T, err error, status int, code string) *store.ResponseError {
	t.Helper()
	var re *store.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v (%T), want *store.ResponseError %d %s", err, err, status, code)
	}
	if re.StatusCode != status || re.Code != code {
		t.Fatalf("err = %v, want HTTP %d %s", err, status, code)
	}
	if re.RequestID == "" || re.Op == "" || re.Message == "" {
		t.Fatalf("err = %#v: want Op, Message and RequestID set", re)
	}
	return re
}

func sum(alg store.ChecksumAlgorithm, p []byte) store.Checksum {
	return store.Checksum{Algorithm: alg, Value: b64(digest(alg, p))}
}

func md5b64(p []byte) string {
	d := md5.Sum(p) //nolint:gosec // test
	return base64.StdEncoding.EncodeToString(d[:])
}

func md5hex(p []byte) string {
	d := md5.Sum(p) //nolint:gosec // test
	return hex.EncodeToString(d[:])
}

// TestDigestVectors pins the CRCs to the catalogue's check values for "123456789", so a mix-up
// of polynomials or byte order cannot pass unnoticed.
func TestDigestVectors(t *testing.T) {
	in := []byte("123456789")
	for alg, want := range map[store.ChecksumAlgorithm]string{
		store.ChecksumCRC32:     "cbf43926",
		store.ChecksumCRC32C:    "e3069283",
		store.ChecksumCRC64NVME: "ae8b14860a799888",
		store.ChecksumSHA1:      "f7c3bc1d808e04732adf679965ccc34ca7ae3441",
	} {
		if got := hex.EncodeToString(digest(alg, in)); got != want {
			t.Errorf("%s = %s, want %s", alg, got, want)
		}
		if digestLen(alg) != len(want)/2 {
			t.Errorf("digestLen(%s) = %d", alg, digestLen(alg))
		}
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error)       { return 0, r.err }
func (r errReader) Seek(int64, int) (int64, error) { return 0, nil }

func TestPutObject(t *testing.T) {
	data := []byte("hello, safeput")
	crc := sum(store.ChecksumCRC64NVME, data)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	type tc struct {
		name   string
		rules  Rules
		ctx    context.Context
		exists bool // bucket/key exists before the put
		in     func(in *store.PutObjectInput)
		// Either an error check or the expected stored bytes.
		status   int
		code     string
		errCheck func(t *testing.T, err error)
		stored   []byte
		sums     store.Checksums
		notSent  bool // rejected before any request: not counted
	}
	cases := []tc{
		{name: "plain: CRC64NVME computed", stored: data, sums: store.Checksums{CRC64NVME: crc.Value, Type: store.ChecksumTypeFullObject}},
		{name: "md5 ok", in: func(in *store.PutObjectInput) { in.ContentMD5 = md5b64(data) }, stored: data,
			sums: store.Checksums{CRC64NVME: crc.Value, Type: store.ChecksumTypeFullObject}},
		{name: "md5 mismatch", in: func(in *store.PutObjectInput) { in.ContentMD5 = md5b64([]byte("x")) }, status: 400, code: "BadDigest"},
		{name: "md5 malformed", in: func(in *store.PutObjectInput) { in.ContentMD5 = "not-base64!" }, status: 400, code: "InvalidDigest"},
		{name: "crc32 ok", in: func(in *store.PutObjectInput) { in.Checksum = sum(store.ChecksumCRC32, data) }, stored: data,
			sums: store.Checksums{CRC32: sum(store.ChecksumCRC32, data).Value, Type: store.ChecksumTypeFullObject}},
		{name: "crc32c ok", in: func(in *store.PutObjectInput) { in.Checksum = sum(store.ChecksumCRC32C, data) }, stored: data,
			sums: store.Checksums{CRC32C: sum(store.ChecksumCRC32C, data).Value, Type: store.ChecksumTypeFullObject}},
		{name: "sha256 ok", in: func(in *store.PutObjectInput) { in.Checksum = sum(store.ChecksumSHA256, data) }, stored: data,
			sums: store.Checksums{SHA256: sum(store.ChecksumSHA256, data).Value, Type: store.ChecksumTypeFullObject}},
		{name: "sha1 ok", in: func(in *store.PutObjectInput) { in.Checksum = sum(store.ChecksumSHA1, data) }, stored: data,
			sums: store.Checksums{SHA1: sum(store.ChecksumSHA1, data).Value, Type: store.ChecksumTypeFullObject}},
		{name: "crc64nvme mismatch", in: func(in *store.PutObjectInput) { in.Checksum = sum(store.ChecksumCRC64NVME, []byte("other")) },
			status: 400, code: "BadDigest", errCheck: func(t *testing.T, err error) {
				if want := "The CRC64NVME you specified did not match the calculated checksum."; !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}},
		{name: "checksum malformed", in: func(in *store.PutObjectInput) {
			in.Checksum = store.Checksum{Algorithm: store.ChecksumCRC32C, Value: "AAAAAAAA"}
		}, status: 400, code: "InvalidRequest"},
		{name: "short body", in: func(in *store.PutObjectInput) { in.ContentLength = int64(len(data)) + 1 }, status: 400, code: "IncompleteBody"},
		{name: "longer body: only ContentLength bytes", in: func(in *store.PutObjectInput) { in.ContentLength = 5 }, stored: data[:5],
			sums: store.Checksums{CRC64NVME: sum(store.ChecksumCRC64NVME, data[:5]).Value, Type: store.ChecksumTypeFullObject}},
		{name: "reads from current position", in: func(in *store.PutObjectInput) {
			_, _ = in.Body.Seek(7, io.SeekStart)
			in.ContentLength = int64(len(data)) - 7
		}, stored: data[7:], sums: store.Checksums{CRC64NVME: sum(store.ChecksumCRC64NVME, data[7:]).Value, Type: store.ChecksumTypeFullObject}},
		{name: "empty object", in: func(in *store.PutObjectInput) { in.ContentLength = 0 }, stored: []byte{},
			sums: store.Checksums{CRC64NVME: sum(store.ChecksumCRC64NVME, nil).Value, Type: store.ChecksumTypeFullObject}},
		{name: "missing bucket", in: func(in *store.PutObjectInput) { in.Bucket = "nope" }, status: 404, code: "NoSuchBucket"},
		{name: "if-none-match, new key", in: func(in *store.PutObjectInput) { in.IfNoneMatch = true }, stored: data,
			sums: store.Checksums{CRC64NVME: crc.Value, Type: store.ChecksumTypeFullObject}},
		{name: "if-none-match, existing key", exists: true, in: func(in *store.PutObjectInput) { in.IfNoneMatch = true }, status: 412, code: "PreconditionFailed"},
		{name: "overwrite without condition", exists: true, stored: data, sums: store.Checksums{CRC64NVME: crc.Value, Type: store.ChecksumTypeFullObject}},
		{name: "if-none-match unsupported", rules: Rules{NoConditionalWrites: true}, in: func(in *store.PutObjectInput) { in.IfNoneMatch = true }, status: 501, code: "NotImplemented"},
		{name: "invalid input", notSent: true, in: func(in *store.PutObjectInput) { in.Key = "" }, errCheck: func(t *testing.T, err error) {
			if !errors.Is(err, store.ErrInvalidInput) {
				t.Errorf("err = %v, want ErrInvalidInput", err)
			}
		}},
		{name: "canceled context", notSent: true, ctx: canceled, errCheck: func(t *testing.T, err error) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		}},
		{name: "body reader fails", in: func(in *store.PutObjectInput) { in.Body = errReader{io.ErrClosedPipe} }, errCheck: func(t *testing.T, err error) {
			var re *store.ResponseError
			if !errors.Is(err, io.ErrClosedPipe) || errors.As(err, &re) {
				t.Errorf("err = %v, want the reader's error and no response", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(WithRules(c.rules), WithBuckets(bkt))
			if c.exists {
				if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: strings.NewReader("old"), ContentLength: 3}); err != nil {
					t.Fatal(err)
				}
			}
			in := &store.PutObjectInput{Bucket: bkt, Key: "k", Body: bytes.NewReader(data), ContentLength: int64(len(data)), ContentType: "text/plain", Metadata: map[string]string{"a": "b"}}
			if c.in != nil {
				c.in(in)
			}
			cx := c.ctx
			if cx == nil {
				cx = ctx
			}
			before := s.Requests("PutObject")
			out, err := s.PutObject(cx, in)
			if c.stored == nil {
				if err == nil {
					t.Fatalf("PutObject succeeded, want an error")
				}
				if c.code != "" {
					wantResp(t, err, c.status, c.code)
				}
				if c.errCheck != nil {
					c.errCheck(t, err)
				}
				if got, ok := s.Object(bkt, "k"); c.exists && (!ok || string(got) != "old") {
					t.Errorf("failed put changed the object: %q %v", got, ok)
				} else if !c.exists && ok {
					t.Errorf("failed put stored %q", got)
				}
				if c.notSent && s.Requests("PutObject") != before {
					t.Errorf("a request that was never sent was counted")
				}
				return
			}
			if err != nil {
				t.Fatalf("PutObject: %v", err)
			}
			if out.ETag != md5hex(c.stored) || out.RequestID == "" || out.Checksums != c.sums {
				t.Errorf("out = %+v, want ETag %s, checksums %+v", out, md5hex(c.stored), c.sums)
			}
			got, ok := s.Object(bkt, "k")
			if !ok || !bytes.Equal(got, c.stored) {
				t.Errorf("stored %q %v, want %q", got, ok, c.stored)
			}
			h, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k", ChecksumMode: true})
			if err != nil || h.Checksums != c.sums || h.Size != int64(len(c.stored)) || h.ContentType != "text/plain" || h.Metadata["a"] != "b" {
				t.Errorf("head = %+v, %v", h, err)
			}
			if s.Requests("PutObject") != before+1 {
				t.Errorf("PutObject count = %d, want %d", s.Requests("PutObject"), before+1)
			}
		})
	}
}

// mp drives one multipart upload in tests.
type mp struct {
	t    *testing.T
	s    *Store
	key  string
	id   string
	alg  store.ChecksumAlgorithm
	data [][]byte
	out  []*store.UploadPartOutput
}

func newMP(t *testing.T, s *Store, key string, alg store.ChecksumAlgorithm, typ store.ChecksumType) *mp {
	t.Helper()
	out, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: key, ChecksumAlgorithm: alg, ChecksumType: typ})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	return &mp{t: t, s: s, key: key, id: out.UploadID, alg: alg}
}

// upload uploads parts 1..len(sizes) with bytes derived from the part number.
func (m *mp) upload(sizes ...int) *mp {
	m.t.Helper()
	for i, n := range sizes {
		p := bytes.Repeat([]byte{byte('a' + i%26)}, n)
		in := &store.UploadPartInput{Bucket: bkt, Key: m.key, UploadID: m.id, PartNumber: int32(i + 1), Body: bytes.NewReader(p), ContentLength: int64(n)}
		if m.alg != store.ChecksumNone {
			in.Checksum = sum(m.alg, p)
		}
		out, err := m.s.UploadPart(ctx, in)
		if err != nil {
			m.t.Fatalf("UploadPart %d: %v", i+1, err)
		}
		m.data = append(m.data, p)
		m.out = append(m.out, out)
	}
	return m
}

func (m *mp) all() []byte { return bytes.Join(m.data, nil) }

func (m *mp) complete() *store.CompleteMultipartUploadInput {
	in := &store.CompleteMultipartUploadInput{Bucket: bkt, Key: m.key, UploadID: m.id}
	for i, o := range m.out {
		cp := store.CompletedPart{PartNumber: int32(i + 1), ETag: o.ETag}
		if m.alg != store.ChecksumNone {
			cp.Checksum = store.Checksum{Algorithm: m.alg, Value: o.Checksums.Get(m.alg)}
		}
		in.Parts = append(in.Parts, cp)
	}
	return in
}

func etagOf(parts [][]byte) string {
	var cat []byte
	for _, p := range parts {
		d := md5.Sum(p) //nolint:gosec // test
		cat = append(cat, d[:]...)
	}
	d := md5.Sum(cat) //nolint:gosec // test
	return fmt.Sprintf("%x-%d", d, len(parts))
}

func TestCompleteMultipartUpload(t *testing.T) {
	small := Rules{MinPartSize: 4}
	type tc struct {
		name   string
		rules  Rules
		alg    store.ChecksumAlgorithm
		typ    store.ChecksumType
		sizes  []int
		exists bool
		mod    func(m *mp, in *store.CompleteMultipartUploadInput)
		status int
		code   string
		msg    string
		sums   func(m *mp) store.Checksums // expected stored checksums on success
	}
	crc64 := func(m *mp) store.Checksums {
		return store.Checksums{CRC64NVME: sum(store.ChecksumCRC64NVME, m.all()).Value, Type: store.ChecksumTypeFullObject}
	}
	cases := []tc{
		{name: "no checksum: CRC64NVME stored", rules: small, sizes: []int{4, 4, 2}, sums: crc64},
		{name: "default min part size ok", sizes: []int{5 << 20, 1}, sums: crc64},
		{name: "default min part size too small", sizes: []int{5<<20 - 1, 1}, status: 400, code: "EntityTooSmall"},
		{name: "small final part ok", rules: small, sizes: []int{4, 1}, sums: crc64},
		{name: "non-final part too small", rules: small, sizes: []int{4, 3, 4}, status: 400, code: "EntityTooSmall"},
		{name: "no minimum", rules: Rules{MinPartSize: -1}, sizes: []int{1, 1, 1}, sums: crc64},
		{name: "equal parts ok", rules: Rules{MinPartSize: 4, EqualParts: true}, sizes: []int{5, 5, 3}, sums: crc64},
		{name: "equal parts violated", rules: Rules{MinPartSize: 4, EqualParts: true}, sizes: []int{5, 6, 3}, status: 400, code: "InvalidPart", msg: "All non-trailing parts must have the same length."},
		{name: "equal parts: final larger", rules: Rules{MinPartSize: 4, EqualParts: true}, sizes: []int{5, 5, 6}, status: 400, code: "InvalidPart"},
		{name: "unequal parts allowed by default", rules: small, sizes: []int{5, 6, 3}, sums: crc64},
		{name: "part missing", rules: small, sizes: []int{4, 4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.Parts = append(in.Parts, store.CompletedPart{PartNumber: 7, ETag: in.Parts[0].ETag})
		}, status: 400, code: "InvalidPart"},
		{name: "wrong etag", rules: small, sizes: []int{4, 4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.Parts[1].ETag = in.Parts[0].ETag },
			status: 400, code: "InvalidPart"},
		{name: "quoted etag accepted", rules: small, sizes: []int{4, 4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.Parts[1].ETag = `"` + in.Parts[1].ETag + `"`
		}, sums: crc64},
		{name: "subset of parts", rules: small, sizes: []int{4, 4, 4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.Parts = []store.CompletedPart{in.Parts[0], in.Parts[2]}
			m.data = [][]byte{m.data[0], m.data[2]}
		}, sums: crc64},
		{name: "gap refused with ContiguousParts", rules: Rules{MinPartSize: 4, ContiguousParts: true}, sizes: []int{4, 4, 4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.Parts = []store.CompletedPart{in.Parts[0], in.Parts[2]}
		}, status: 400, code: "InvalidPart"},
		{name: "object size ok", rules: small, sizes: []int{4, 2}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.ObjectSize = 6 }, sums: crc64},
		{name: "object size mismatch", rules: small, sizes: []int{4, 2}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.ObjectSize = 7 },
			status: 400, code: "InvalidRequest"},
		{name: "if-none-match, new key", rules: small, sizes: []int{4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.IfNoneMatch = true }, sums: crc64},
		{name: "if-none-match, existing key", rules: small, sizes: []int{4}, exists: true, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.IfNoneMatch = true },
			status: 412, code: "PreconditionFailed"},
		{name: "if-none-match unsupported", rules: Rules{MinPartSize: 4, NoConditionalWrites: true}, sizes: []int{4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.IfNoneMatch = true },
			status: 501, code: "NotImplemented"},
		{name: "unknown upload", rules: small, sizes: []int{4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.UploadID = "nope" },
			status: 404, code: "NoSuchUpload"},
		{name: "upload of another key", rules: small, sizes: []int{4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.Key = "other" },
			status: 404, code: "NoSuchUpload"},
		{name: "missing bucket", rules: small, sizes: []int{4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) { in.Bucket = "nope" },
			status: 404, code: "NoSuchBucket"},
		{name: "full-object crc64nvme ok", rules: small, alg: store.ChecksumCRC64NVME, sizes: []int{4, 4, 3}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.FullObjectChecksum = sum(store.ChecksumCRC64NVME, m.all())
			in.ChecksumType = store.ChecksumTypeFullObject
		}, sums: crc64},
		{name: "full-object crc64nvme mismatch", rules: small, alg: store.ChecksumCRC64NVME, sizes: []int{4, 4, 3}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.FullObjectChecksum = sum(store.ChecksumCRC64NVME, m.all()[1:])
		}, status: 400, code: "BadDigest", msg: "The CRC64NVME you specified did not match the calculated checksum."},
		{name: "full-object crc32c ok", rules: small, alg: store.ChecksumCRC32C, typ: store.ChecksumTypeFullObject, sizes: []int{4, 3}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.FullObjectChecksum = sum(store.ChecksumCRC32C, m.all())
		}, sums: func(m *mp) store.Checksums {
			return store.Checksums{CRC32C: sum(store.ChecksumCRC32C, m.all()).Value, Type: store.ChecksumTypeFullObject}
		}},
		{name: "full-object crc32 mismatch", rules: small, alg: store.ChecksumCRC32, typ: store.ChecksumTypeFullObject, sizes: []int{4, 3}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.FullObjectChecksum = sum(store.ChecksumCRC32, m.all()[:6])
		}, status: 400, code: "BadDigest"},
		{name: "full-object not sent: computed", rules: small, alg: store.ChecksumCRC64NVME, sizes: []int{4, 3}, sums: crc64},
		{name: "full-object wrong algorithm", rules: small, alg: store.ChecksumCRC64NVME, sizes: []int{4, 3}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.FullObjectChecksum = sum(store.ChecksumCRC32C, m.all())
		}, status: 400, code: "InvalidRequest"},
		{name: "checksum type differs from create", rules: small, alg: store.ChecksumCRC64NVME, sizes: []int{4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.ChecksumType = store.ChecksumTypeComposite
		}, status: 400, code: "InvalidRequest"},
		{name: "no algorithm at create, crc32c at complete", rules: small, sizes: []int{4, 3}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.FullObjectChecksum = sum(store.ChecksumCRC32C, m.all())
		}, sums: func(m *mp) store.Checksums {
			return store.Checksums{CRC32C: sum(store.ChecksumCRC32C, m.all()).Value, Type: store.ChecksumTypeFullObject}
		}},
		{name: "composite crc32c", rules: small, alg: store.ChecksumCRC32C, sizes: []int{4, 4, 1}, sums: func(m *mp) store.Checksums {
			var raw []byte
			for _, p := range m.data {
				raw = append(raw, digest(store.ChecksumCRC32C, p)...)
			}
			return store.Checksums{CRC32C: b64(digest(store.ChecksumCRC32C, raw)) + "-3", Type: store.ChecksumTypeComposite}
		}},
		{name: "composite sha256", rules: small, alg: store.ChecksumSHA256, sizes: []int{4, 1}, sums: func(m *mp) store.Checksums {
			raw := append(digest(store.ChecksumSHA256, m.data[0]), digest(store.ChecksumSHA256, m.data[1])...)
			return store.Checksums{SHA256: b64(digest(store.ChecksumSHA256, raw)) + "-2", Type: store.ChecksumTypeComposite}
		}},
		{name: "composite: part checksum missing", rules: small, alg: store.ChecksumCRC32, sizes: []int{4, 1}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.Parts[1].Checksum = store.Checksum{}
		}, status: 400, code: "InvalidRequest"},
		{name: "composite: part checksum wrong", rules: small, alg: store.ChecksumCRC32, sizes: []int{4, 1}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.Parts[1].Checksum = in.Parts[0].Checksum
		}, status: 400, code: "InvalidPart"},
		{name: "composite: whole checksum mismatch", rules: small, alg: store.ChecksumCRC32, sizes: []int{4, 1}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.FullObjectChecksum = sum(store.ChecksumCRC32, m.all())
		}, status: 400, code: "BadDigest"},
		{name: "unordered parts refused before sending", rules: small, sizes: []int{4, 4}, mod: func(m *mp, in *store.CompleteMultipartUploadInput) {
			in.Parts[0], in.Parts[1] = in.Parts[1], in.Parts[0]
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(WithRules(c.rules), WithBuckets(bkt))
			if c.exists {
				if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: strings.NewReader("old"), ContentLength: 3}); err != nil {
					t.Fatal(err)
				}
			}
			m := newMP(t, s, "k", c.alg, c.typ).upload(c.sizes...)
			in := m.complete()
			if c.mod != nil {
				c.mod(m, in)
			}
			out, err := s.CompleteMultipartUpload(ctx, in)
			if c.sums == nil {
				if err == nil {
					t.Fatal("Complete succeeded, want an error")
				}
				if c.code == "" {
					if !errors.Is(err, store.ErrInvalidInput) {
						t.Fatalf("err = %v, want ErrInvalidInput", err)
					}
				} else {
					re := wantResp(t, err, c.status, c.code)
					if c.msg != "" && re.Message != c.msg {
						t.Errorf("message %q, want %q", re.Message, c.msg)
					}
				}
				// A failed Complete leaves the upload in place, to be retried or aborted.
				if ups := s.Uploads(bkt); len(ups) != 1 || ups[0].UploadID != m.id {
					t.Errorf("uploads after failed Complete = %+v", ups)
				}
				if got, ok := s.Object(bkt, "k"); ok && (!c.exists || string(got) != "old") {
					t.Errorf("failed Complete left %q at the key", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := c.sums(m)
			if out.ETag != etagOf(m.data) || out.Checksums != want || out.RequestID == "" {
				t.Errorf("out = %+v, want ETag %s checksums %+v", out, etagOf(m.data), want)
			}
			if got, _ := s.Object(bkt, "k"); !bytes.Equal(got, m.all()) {
				t.Errorf("stored %d bytes, want %d", len(got), len(m.all()))
			}
			h, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k", ChecksumMode: true})
			if err != nil || h.Checksums != want || h.ETag != out.ETag || h.Size != int64(len(m.all())) {
				t.Errorf("head = %+v, %v", h, err)
			}
			if ups := s.Uploads(bkt); len(ups) != 0 {
				t.Errorf("upload still listed after Complete: %+v", ups)
			}
			// A re-sent Complete: NoSuchUpload by default (MinIO).
			_, err = s.CompleteMultipartUpload(ctx, in)
			wantResp(t, err, 404, "NoSuchUpload")
		})
	}
}

func TestReplayComplete(t *testing.T) {
	s := New(WithRules(Rules{MinPartSize: 1, ReplayComplete: true}), WithBuckets(bkt))
	m := newMP(t, s, "k", store.ChecksumNone, "").upload(3, 2)
	first, err := s.CompleteMultipartUpload(ctx, m.complete())
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.CompleteMultipartUpload(ctx, m.complete())
	if err != nil || again.ETag != first.ETag || again.Checksums != first.Checksums || again.RequestID == first.RequestID {
		t.Fatalf("replay = %+v, %v; first %+v", again, err, first)
	}
	// Abort of a completed upload is still NoSuchUpload.
	err = s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: m.id})
	wantResp(t, err, 404, "NoSuchUpload")
}

func TestCreateMultipartUpload(t *testing.T) {
	cases := []struct {
		alg     store.ChecksumAlgorithm
		typ     store.ChecksumType
		bucket  string
		code    string
		wantTyp store.ChecksumType
	}{
		{alg: "", typ: "", wantTyp: ""},
		{alg: store.ChecksumCRC64NVME, wantTyp: store.ChecksumTypeFullObject},
		{alg: store.ChecksumCRC32C, wantTyp: store.ChecksumTypeComposite},
		{alg: store.ChecksumCRC32C, typ: store.ChecksumTypeFullObject, wantTyp: store.ChecksumTypeFullObject},
		{alg: store.ChecksumCRC64NVME, typ: store.ChecksumTypeComposite, code: "InvalidRequest"},
		{alg: store.ChecksumSHA256, typ: store.ChecksumTypeFullObject, code: "InvalidRequest"},
		{alg: store.ChecksumSHA1, typ: store.ChecksumTypeComposite, wantTyp: store.ChecksumTypeComposite},
		{bucket: "nope", code: "NoSuchBucket"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", c.alg, c.typ, c.bucket), func(t *testing.T) {
			s := New(WithBuckets(bkt))
			b := cmpOr(c.bucket, bkt)
			out, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: b, Key: "k", ChecksumAlgorithm: c.alg, ChecksumType: c.typ})
			if c.code != "" {
				status := 400
				if c.code == "NoSuchBucket" {
					status = 404
				}
				wantResp(t, err, status, c.code)
				return
			}
			if err != nil || out.UploadID == "" {
				t.Fatalf("out %+v, err %v", out, err)
			}
			s.mu.Lock()
			u := s.uploads[out.UploadID]
			s.mu.Unlock()
			if u.typ != c.wantTyp {
				t.Errorf("type %q, want %q", u.typ, c.wantTyp)
			}
		})
	}
	// Upload ids are unique.
	s := New(WithBuckets(bkt))
	seen := map[string]bool{}
	for range 5 {
		out, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k"})
		if err != nil || seen[out.UploadID] {
			t.Fatalf("duplicate or failed: %+v %v", out, err)
		}
		seen[out.UploadID] = true
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestUploadPart(t *testing.T) {
	data := []byte("part data")
	type tc struct {
		name   string
		alg    store.ChecksumAlgorithm
		in     func(in *store.UploadPartInput)
		status int
		code   string
		echo   store.Checksums
	}
	cases := []tc{
		{name: "plain"},
		{name: "md5 ok", in: func(in *store.UploadPartInput) { in.ContentMD5 = md5b64(data) }},
		{name: "md5 mismatch", in: func(in *store.UploadPartInput) { in.ContentMD5 = md5b64(data[1:]) }, status: 400, code: "BadDigest"},
		{name: "checksum ok", alg: store.ChecksumCRC32C, in: func(in *store.UploadPartInput) { in.Checksum = sum(store.ChecksumCRC32C, data) },
			echo: store.Checksums{CRC32C: sum(store.ChecksumCRC32C, data).Value}},
		{name: "checksum mismatch", alg: store.ChecksumCRC32C, in: func(in *store.UploadPartInput) { in.Checksum = sum(store.ChecksumCRC32C, data[1:]) },
			status: 400, code: "BadDigest"},
		{name: "checksum missing for an upload with an algorithm", alg: store.ChecksumCRC64NVME, status: 400, code: "InvalidRequest"},
		{name: "other algorithm than the upload's", alg: store.ChecksumCRC64NVME, in: func(in *store.UploadPartInput) { in.Checksum = sum(store.ChecksumCRC32, data) },
			status: 400, code: "InvalidRequest"},
		{name: "short body", in: func(in *store.UploadPartInput) { in.ContentLength++ }, status: 400, code: "IncompleteBody"},
		{name: "unknown upload", in: func(in *store.UploadPartInput) { in.UploadID = "nope" }, status: 404, code: "NoSuchUpload"},
		{name: "missing bucket", in: func(in *store.UploadPartInput) { in.Bucket = "nope" }, status: 404, code: "NoSuchBucket"},
		{name: "part number 10000 ok", in: func(in *store.UploadPartInput) { in.PartNumber = store.MaxPartNumber }},
		{name: "part number 10001 invalid", in: func(in *store.UploadPartInput) { in.PartNumber = store.MaxPartNumber + 1 }, status: -1},
		{name: "part number 0 invalid", in: func(in *store.UploadPartInput) { in.PartNumber = 0 }, status: -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(WithBuckets(bkt))
			m := newMP(t, s, "k", c.alg, "")
			in := &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: m.id, PartNumber: 1, Body: bytes.NewReader(data), ContentLength: int64(len(data))}
			if c.in != nil {
				c.in(in)
			}
			out, err := s.UploadPart(ctx, in)
			switch {
			case c.status == -1:
				if !errors.Is(err, store.ErrInvalidInput) {
					t.Fatalf("err = %v, want ErrInvalidInput", err)
				}
				return
			case c.code != "":
				wantResp(t, err, c.status, c.code)
				return
			case err != nil:
				t.Fatal(err)
			}
			if out.ETag != md5hex(data) || out.Checksums != c.echo {
				t.Errorf("out = %+v", out)
			}
		})
	}
}

func TestPartReuploadAndListParts(t *testing.T) {
	s := New(WithBuckets(bkt), WithRules(Rules{MinPartSize: 1}))
	m := newMP(t, s, "k", store.ChecksumCRC32C, "")
	up := func(n int32, p string) *store.UploadPartOutput {
		out, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: m.id, PartNumber: n,
			Body: strings.NewReader(p), ContentLength: int64(len(p)), Checksum: sum(store.ChecksumCRC32C, []byte(p))})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	up(3, "three")
	up(1, "one")
	up(2, "two")
	second := up(1, "uno") // replaces part 1
	out, err := s.ListParts(ctx, &store.ListPartsInput{Bucket: bkt, Key: "k", UploadID: m.id, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		n    int32
		body string
	}{{1, "uno"}, {2, "two"}, {3, "three"}}
	if len(out.Parts) != len(want) {
		t.Fatalf("parts = %+v", out.Parts)
	}
	for i, w := range want {
		p := out.Parts[i]
		if p.PartNumber != w.n || p.Size != int64(len(w.body)) || p.ETag != md5hex([]byte(w.body)) ||
			p.Checksums.CRC32C != sum(store.ChecksumCRC32C, []byte(w.body)).Value || p.LastModified.IsZero() {
			t.Errorf("part %d = %+v, want %q", i, p, w.body)
		}
	}
	if out.Parts[0].ETag != second.ETag {
		t.Errorf("re-upload did not replace part 1")
	}
	_, err = s.ListParts(ctx, &store.ListPartsInput{Bucket: bkt, Key: "k", UploadID: "nope"})
	wantResp(t, err, 404, "NoSuchUpload")
}

func TestAbortAndListUploads(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := New(WithBuckets(bkt, "other"), WithClock(func() time.Time { clock = clock.Add(time.Second); return clock }))
	a2 := newMP(t, s, "a/2", "", "")
	a1 := newMP(t, s, "a/1", "", "")
	a1b := newMP(t, s, "a/1", "", "")
	b := newMP(t, s, "b/1", "", "")
	if _, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "other", Key: "a/9"}); err != nil {
		t.Fatal(err)
	}
	ids := func(prefix string) []string {
		t.Helper()
		out, err := s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bkt, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		var r []string
		for _, u := range out.Uploads {
			if u.Initiated.IsZero() {
				t.Errorf("upload %+v has no initiation time", u)
			}
			r = append(r, u.UploadID)
		}
		return r
	}
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{a1.id, a1b.id, a2.id, b.id}},
		{"a/", []string{a1.id, a1b.id, a2.id}},
		{"a/1", []string{a1.id, a1b.id}},
		{"c", nil},
	} {
		if got := ids(c.prefix); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("prefix %q: %v, want %v", c.prefix, got, c.want)
		}
	}
	if err := s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bkt, Key: "a/1", UploadID: a1.id}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		in   store.AbortMultipartUploadInput
		code string
	}{
		{"again", store.AbortMultipartUploadInput{Bucket: bkt, Key: "a/1", UploadID: a1.id}, "NoSuchUpload"},
		{"unknown", store.AbortMultipartUploadInput{Bucket: bkt, Key: "a/1", UploadID: "x"}, "NoSuchUpload"},
		{"other key", store.AbortMultipartUploadInput{Bucket: bkt, Key: "a/2", UploadID: a1b.id}, "NoSuchUpload"},
		{"missing bucket", store.AbortMultipartUploadInput{Bucket: "nope", Key: "a/2", UploadID: a2.id}, "NoSuchBucket"},
	} {
		err := s.AbortMultipartUpload(ctx, &c.in)
		wantResp(t, err, 404, c.code)
	}
	if got := ids(""); fmt.Sprint(got) != fmt.Sprint([]string{a1b.id, a2.id, b.id}) {
		t.Errorf("after abort: %v", got)
	}
	// Parts of an aborted upload are gone with it.
	_, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "a/1", UploadID: a1.id, PartNumber: 1, Body: strings.NewReader("x"), ContentLength: 1})
	wantResp(t, err, 404, "NoSuchUpload")
	_, err = s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: "nope"})
	wantResp(t, err, 404, "NoSuchBucket")
	if got := len(s.Uploads("other")); got != 1 {
		t.Errorf("Uploads(other) = %d, want 1", got)
	}
}

func TestHeadGetDelete(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	s := New(WithBuckets(bkt), WithClock(func() time.Time { return now }))
	data := []byte("0123456789")
	if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: bytes.NewReader(data), ContentLength: 10,
		Checksum: sum(store.ChecksumCRC32C, data), ContentType: "x/y"}); err != nil {
		t.Fatal(err)
	}
	h, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k"})
	if err != nil || h.Size != 10 || h.ETag != md5hex(data) || h.ContentType != "x/y" || !h.LastModified.Equal(now) || h.Checksums != (store.Checksums{}) {
		t.Errorf("head without checksum mode = %+v, %v", h, err)
	}
	h, err = s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k", ChecksumMode: true})
	if err != nil || h.Checksums != (store.Checksums{CRC32C: sum(store.ChecksumCRC32C, data).Value, Type: store.ChecksumTypeFullObject}) {
		t.Errorf("head with checksum mode = %+v, %v", h, err)
	}
	_, err = s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "missing"})
	wantResp(t, err, 404, "NoSuchKey")
	_, err = s.HeadObject(ctx, &store.HeadObjectInput{Bucket: "nope", Key: "k"})
	wantResp(t, err, 404, "NoSuchBucket")

	for _, c := range []struct {
		off, n int64
		want   string
		code   string
	}{
		{0, 0, "0123456789", ""},
		{3, 0, "3456789", ""},
		{3, 4, "3456", ""},
		{8, 100, "89", ""},
		{9, 1, "9", ""},
		{10, 0, "", "InvalidRange"},
		{11, 1, "", "InvalidRange"},
	} {
		out, err := s.GetObject(ctx, &store.GetObjectInput{Bucket: bkt, Key: "k", Offset: c.off, Length: c.n})
		if c.code != "" {
			wantResp(t, err, 416, c.code)
			continue
		}
		if err != nil {
			t.Fatalf("get %d+%d: %v", c.off, c.n, err)
		}
		b, _ := io.ReadAll(out.Body)
		_ = out.Body.Close()
		if string(b) != c.want || out.Size != int64(len(c.want)) || out.ETag != md5hex(data) {
			t.Errorf("get %d+%d = %q (size %d), want %q", c.off, c.n, b, out.Size, c.want)
		}
	}
	_, err = s.GetObject(ctx, &store.GetObjectInput{Bucket: bkt, Key: "missing"})
	wantResp(t, err, 404, "NoSuchKey")

	if err := s.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: bkt, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: bkt, Key: "k"}); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	if _, ok := s.Object(bkt, "k"); ok {
		t.Error("object survived delete")
	}
	wantResp(t, s.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: "nope", Key: "k"}), 404, "NoSuchBucket")

	// An empty object reads back empty.
	if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "e", Body: bytes.NewReader(nil)}); err != nil {
		t.Fatal(err)
	}
	out, err := s.GetObject(ctx, &store.GetObjectInput{Bucket: bkt, Key: "e"})
	if err != nil || out.Size != 0 {
		t.Fatalf("empty get: %+v %v", out, err)
	}
	counts := s.RequestCounts()
	if counts["PutObject"] != 2 || counts["HeadObject"] != 4 || counts["GetObject"] != 9 || counts["DeleteObject"] != 3 {
		t.Errorf("counts = %v", counts)
	}
}

// TestInvalidInputAndContext checks that every method validates first and honours a done
// context, counting neither as a request.
func TestInvalidInputAndContext(t *testing.T) {
	s := New(WithBuckets(bkt))
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	body := strings.NewReader("x")
	calls := map[string]func(context.Context, bool) error{
		"PutObject": func(c context.Context, bad bool) error {
			in := &store.PutObjectInput{Bucket: bkt, Key: "k", Body: body, ContentLength: 1}
			if bad {
				in = nil
			}
			_, err := s.PutObject(c, in)
			return err
		},
		"CreateMultipartUpload": func(c context.Context, bad bool) error {
			in := &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k"}
			if bad {
				in.ChecksumAlgorithm = "MD4"
			}
			_, err := s.CreateMultipartUpload(c, in)
			return err
		},
		"UploadPart": func(c context.Context, bad bool) error {
			in := &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: "u", PartNumber: 1, Body: body, ContentLength: 1}
			if bad {
				in.UploadID = ""
			}
			_, err := s.UploadPart(c, in)
			return err
		},
		"ListParts": func(c context.Context, bad bool) error {
			in := &store.ListPartsInput{Bucket: bkt, Key: "k", UploadID: "u"}
			if bad {
				in.PageSize = -1
			}
			_, err := s.ListParts(c, in)
			return err
		},
		"CompleteMultipartUpload": func(c context.Context, bad bool) error {
			in := &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: "u", Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e"}}}
			if bad {
				in.Parts = nil
			}
			_, err := s.CompleteMultipartUpload(c, in)
			return err
		},
		"AbortMultipartUpload": func(c context.Context, bad bool) error {
			in := &store.AbortMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: "u"}
			if bad {
				in.Key = ""
			}
			return s.AbortMultipartUpload(c, in)
		},
		"HeadObject": func(c context.Context, bad bool) error {
			in := &store.HeadObjectInput{Bucket: bkt, Key: "k"}
			if bad {
				in.Key = string([]byte{0xff})
			}
			_, err := s.HeadObject(c, in)
			return err
		},
		"GetObject": func(c context.Context, bad bool) error {
			in := &store.GetObjectInput{Bucket: bkt, Key: "k"}
			if bad {
				in.Offset = -1
			}
			_, err := s.GetObject(c, in)
			return err
		},
		"DeleteObject": func(c context.Context, bad bool) error {
			in := &store.DeleteObjectInput{Bucket: bkt, Key: "k"}
			if bad {
				in.Bucket = ""
			}
			return s.DeleteObject(c, in)
		},
		"ListMultipartUploads": func(c context.Context, bad bool) error {
			in := &store.ListMultipartUploadsInput{Bucket: bkt}
			if bad {
				in.Bucket = ""
			}
			_, err := s.ListMultipartUploads(c, in)
			return err
		},
	}
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			if err := call(ctx, true); !errors.Is(err, store.ErrInvalidInput) {
				t.Errorf("invalid input: err = %v", err)
			}
			if err := call(canceled, false); !errors.Is(err, context.Canceled) {
				t.Errorf("canceled: err = %v", err)
			}
			if n := s.Requests(op); n != 0 {
				t.Errorf("%d requests counted, want 0", n)
			}
		})
	}
}

// TestConcurrent runs writers, multipart uploads and readers at once; -race checks the locking,
// If-None-Match checks that exactly one create wins.
func TestConcurrent(t *testing.T) {
	s := New(WithBuckets(bkt), WithRules(Rules{MinPartSize: 1}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for g := range 16 {
		wg.Go(func() {
			p := []byte(fmt.Sprintf("writer %d", g))
			_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "race", Body: bytes.NewReader(p), ContentLength: int64(len(p)), IfNoneMatch: true})
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
			key := fmt.Sprintf("mp/%d", g)
			up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: key})
			if err != nil {
				t.Error(err)
				return
			}
			var parts []store.CompletedPart
			for n := int32(1); n <= 4; n++ {
				out, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: key, UploadID: up.UploadID, PartNumber: n, Body: bytes.NewReader(p), ContentLength: int64(len(p))})
				if err != nil {
					t.Error(err)
					return
				}
				parts = append(parts, store.CompletedPart{PartNumber: n, ETag: out.ETag})
			}
			_, _ = s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bkt})
			if _, err := s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: key, UploadID: up.UploadID, Parts: parts}); err != nil {
				t.Error(err)
			}
			if _, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: key}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d conditional creates won, want 1", wins)
	}
	if n := s.Requests("UploadPart"); n != 64 {
		t.Errorf("UploadPart count %d, want 64", n)
	}
}

func TestCreateBucketKeepsObjects(t *testing.T) {
	s := New()
	s.CreateBucket(bkt)
	s.CreateBucket("") // ignored
	if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: strings.NewReader("x"), ContentLength: 1}); err != nil {
		t.Fatal(err)
	}
	s.CreateBucket(bkt)
	if b, ok := s.Object(bkt, "k"); !ok || string(b) != "x" {
		t.Errorf("object lost: %q %v", b, ok)
	}
	// Object returns a copy: changing it does not change the store.
	b, _ := s.Object(bkt, "k")
	b[0] = 'y'
	if b2, _ := s.Object(bkt, "k"); string(b2) != "x" {
		t.Error("Object shares the stored bytes")
	}
}
