package faulty_test

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // test
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
)

const bkt = "bucket"

var ctx = context.Background()

func newInner(rules memstore.Rules) *memstore.Store {
	return memstore.New(memstore.WithBuckets(bkt), memstore.WithRules(rules))
}

func wantResp(t *testing.T, err error, status int, code string) {
	t.Helper()
	var re *store.ResponseError
	if !errors.As(err, &re) || re.StatusCode != status || re.Code != code || re.RequestID == "" || re.Op == "" {
		t.Fatalf("err = %v, want *store.ResponseError HTTP %d %s with Op and RequestID", err, status, code)
	}
}

func wantNoResp(t *testing.T, err error) {
	t.Helper()
	var re *store.ResponseError
	if err == nil || errors.As(err, &re) {
		t.Fatalf("err = %v, want a transport error without a response", err)
	}
}

func md5hex(p []byte) string {
	d := md5.Sum(p) //nolint:gosec // test
	return hex.EncodeToString(d[:])
}

func md5b64(p []byte) string {
	d := md5.Sum(p) //nolint:gosec // test
	return base64.StdEncoding.EncodeToString(d[:])
}

// crc64 computes a checksum through memstore's answer, so the test does not need its own CRCs:
// memstore echoes the CRC64NVME it computes for an upload without a checksum.
func crc64(t *testing.T, p []byte) store.Checksum {
	t.Helper()
	m := newInner(memstore.Rules{})
	out, err := m.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "x", Body: bytes.NewReader(p), ContentLength: int64(len(p))})
	if err != nil {
		t.Fatal(err)
	}
	return store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: out.Checksums.CRC64NVME}
}

func putIn(p []byte) *store.PutObjectInput {
	return &store.PutObjectInput{Bucket: bkt, Key: "k", Body: bytes.NewReader(p), ContentLength: int64(len(p))}
}

// mpu starts an upload through s and uploads one part per size; it returns the upload id, the
// parts for Complete and the object's bytes.
func mpu(t *testing.T, s store.Store, alg store.ChecksumAlgorithm, sizes ...int) (string, []store.CompletedPart, []byte) {
	t.Helper()
	up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k", ChecksumAlgorithm: alg})
	if err != nil {
		t.Fatal(err)
	}
	var parts []store.CompletedPart
	var all []byte
	for i, n := range sizes {
		p := bytes.Repeat([]byte{byte('a' + i)}, n)
		in := &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: up.UploadID, PartNumber: int32(i + 1), Body: bytes.NewReader(p), ContentLength: int64(n)}
		out, err := s.UploadPart(ctx, in)
		if err != nil {
			t.Fatalf("part %d: %v", i+1, err)
		}
		parts = append(parts, store.CompletedPart{PartNumber: int32(i + 1), ETag: out.ETag})
		all = append(all, p...)
	}
	return up.UploadID, parts, all
}

func TestResponseFaultsOnPut(t *testing.T) {
	for _, c := range []struct {
		fault  faulty.Fault
		status int
		code   string
	}{
		{faulty.SlowDown(), 503, "SlowDown"},
		{faulty.InternalError(), 500, "InternalError"},
		{faulty.ChecksumMismatch(), 400, "XAmzContentChecksumMismatch"},
		{faulty.Forbidden(), 403, "AccessDenied"},
		{faulty.Response(429, "TooManyRequests", "slow down"), 429, "TooManyRequests"},
	} {
		t.Run(c.fault.String(), func(t *testing.T) {
			inner := newInner(memstore.Rules{})
			s := faulty.New(inner, faulty.First(faulty.OpPutObject, 1, c.fault))
			_, err := s.PutObject(ctx, putIn([]byte("data")))
			wantResp(t, err, c.status, c.code)
			if inner.Requests(faulty.OpPutObject) != 0 {
				t.Error("inner store was called")
			}
			if _, ok := inner.Object(bkt, "k"); ok {
				t.Error("object stored")
			}
			// The rule covered one call: the retry goes through.
			if _, err := s.PutObject(ctx, putIn([]byte("data"))); err != nil {
				t.Fatalf("second call: %v", err)
			}
			if got := s.Injected(); len(got) != 1 || got[0].Fault != c.fault || got[0].Op != faulty.OpPutObject || got[0].Key != "k" || got[0].Seq != 1 {
				t.Errorf("Injected = %+v", got)
			}
			if s.Count(c.fault) != 1 {
				t.Errorf("Count = %d", s.Count(c.fault))
			}
		})
	}
}

func TestCompleteOnlyFaults(t *testing.T) {
	for _, c := range []struct {
		fault faulty.Fault
		code  string
		msg   string
	}{
		{faulty.EntityTooSmall(), "EntityTooSmall", ""},
		{faulty.UnequalParts(), "InvalidPart", "All non-trailing parts must have the same length."},
	} {
		t.Run(c.fault.String(), func(t *testing.T) {
			inner := newInner(memstore.Rules{MinPartSize: 1})
			s := faulty.New(inner, faulty.Always(faulty.AnyOp, c.fault))
			id, parts, _ := mpu(t, s, "", 3, 3) // Create and UploadPart are not faulted
			_, err := s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: id, Parts: parts})
			wantResp(t, err, 400, c.code)
			if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err %v lacks %q", err, c.msg)
			}
			if inner.Requests(faulty.OpCompleteMultipart) != 0 || len(inner.Uploads(bkt)) != 1 {
				t.Error("inner Complete was called")
			}
			if n := len(s.Injected()); n != 1 {
				t.Errorf("%d injections, want 1", n)
			}
		})
	}
}

func TestResetMidBody(t *testing.T) {
	inner := newInner(memstore.Rules{})
	s := faulty.New(inner, faulty.Always(faulty.AnyOp, faulty.ResetMidBody()))
	body := bytes.NewReader(make([]byte, 100))
	_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: body, ContentLength: 100})
	wantNoResp(t, err)
	var oe *net.OpError
	if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) {
		t.Fatalf("err = %v, want *net.OpError wrapping ECONNRESET", err)
	}
	if pos, _ := body.Seek(0, io.SeekCurrent); pos != 50 {
		t.Errorf("body read to %d, want 50 (half)", pos)
	}
	if inner.Requests(faulty.OpPutObject) != 0 {
		t.Error("inner store was called")
	}
	// Operations without a body are reset too.
	_, err = s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k"})
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("head: err = %v", err)
	}
}

func TestDropResponse(t *testing.T) {
	t.Run("PutObject", func(t *testing.T) {
		inner := newInner(memstore.Rules{})
		s := faulty.New(inner, faulty.First(faulty.OpPutObject, 1, faulty.DropResponse()))
		_, err := s.PutObject(ctx, putIn([]byte("landed")))
		wantNoResp(t, err)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("err = %v, want io.ErrUnexpectedEOF", err)
		}
		if got, ok := inner.Object(bkt, "k"); !ok || string(got) != "landed" {
			t.Errorf("inner holds %q %v, want the object: the store committed", got, ok)
		}
		// A create-only retry now meets the object it wrote itself.
		_, err = s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: strings.NewReader("landed"), ContentLength: 6, IfNoneMatch: true})
		wantResp(t, err, 412, "PreconditionFailed")
	})
	t.Run("Complete, then NoSuchUploadAfterCommit", func(t *testing.T) {
		// AWS-like inner store that would replay the success; the fault makes it answer like MinIO.
		inner := newInner(memstore.Rules{MinPartSize: 1, ReplayComplete: true})
		s := faulty.New(inner,
			faulty.Nth(faulty.OpCompleteMultipart, 1, faulty.DropResponse()),
			faulty.Nth(faulty.OpCompleteMultipart, 2, faulty.NoSuchUploadAfterCommit()))
		id, parts, all := mpu(t, s, "", 2, 1)
		in := &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: id, Parts: parts}
		_, err := s.CompleteMultipartUpload(ctx, in)
		wantNoResp(t, err)
		if got, _ := inner.Object(bkt, "k"); !bytes.Equal(got, all) || len(inner.Uploads(bkt)) != 0 {
			t.Fatalf("Complete did not commit: %q, uploads %v", got, inner.Uploads(bkt))
		}
		_, err = s.CompleteMultipartUpload(ctx, in)
		wantResp(t, err, 404, "NoSuchUpload")
		if inner.Requests(faulty.OpCompleteMultipart) != 2 {
			t.Errorf("inner Complete called %d times, want 2", inner.Requests(faulty.OpCompleteMultipart))
		}
		// Third call: no rule left, the inner store's replay comes through.
		if _, err := s.CompleteMultipartUpload(ctx, in); err != nil {
			t.Errorf("third Complete: %v", err)
		}
		inj := s.Injected()
		if len(inj) != 2 || inj[0].Fault != faulty.DropResponse() || inj[1].Fault != faulty.NoSuchUploadAfterCommit() || inj[1].UploadID != id || inj[1].Rule != 1 {
			t.Errorf("Injected = %+v", inj)
		}
	})
	t.Run("NoSuchUploadAfterCommit keeps a real refusal", func(t *testing.T) {
		inner := newInner(memstore.Rules{}) // 5 MiB minimum: the 1-byte first part is refused
		s := faulty.New(inner, faulty.Always(faulty.OpCompleteMultipart, faulty.NoSuchUploadAfterCommit()))
		id, parts, _ := mpu(t, s, "", 1, 1)
		_, err := s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: id, Parts: parts})
		wantResp(t, err, 400, "EntityTooSmall")
	})
	t.Run("GetObject and Abort", func(t *testing.T) {
		inner := newInner(memstore.Rules{})
		if _, err := inner.PutObject(ctx, putIn([]byte("x"))); err != nil {
			t.Fatal(err)
		}
		s := faulty.New(inner, faulty.Always(faulty.AnyOp, faulty.DropResponse()))
		_, err := s.GetObject(ctx, &store.GetObjectInput{Bucket: bkt, Key: "k"})
		wantNoResp(t, err)
		up, err := inner.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		err = s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: up.UploadID})
		wantNoResp(t, err)
		if len(inner.Uploads(bkt)) != 0 {
			t.Error("abort did not reach the inner store")
		}
	})
}

func TestTruncateAndFlipPut(t *testing.T) {
	data := []byte("0123456789abcdef")
	for _, c := range []struct {
		fault faulty.Fault
		want  []byte
	}{
		{faulty.Truncate(), data[:8]},
		{faulty.FlipByte(), append(append(bytes.Clone(data[:8]), data[8]^0xff), data[9:]...)},
	} {
		t.Run(c.fault.String(), func(t *testing.T) {
			inner := newInner(memstore.Rules{})
			s := faulty.New(inner, faulty.Always(faulty.OpPutObject, c.fault))
			sent := crc64(t, data)
			in := putIn(data)
			in.Checksum, in.ContentMD5 = sent, md5b64(data)
			out, err := s.PutObject(ctx, in)
			if err != nil {
				t.Fatalf("PutObject: %v (the lying store must answer OK)", err)
			}
			// The caller sees a real ETag of what was stored, and its own checksum echoed.
			if out.ETag != md5hex(c.want) || out.Checksums.CRC64NVME != sent.Value || out.RequestID == "" {
				t.Errorf("out = %+v, want ETag %s and the sent CRC %s", out, md5hex(c.want), sent.Value)
			}
			got, ok := inner.Object(bkt, "k")
			if !ok || !bytes.Equal(got, c.want) {
				t.Errorf("inner holds %q, want %q", got, c.want)
			}
			// HEAD tells the truth: the stored CRC is not the one sent.
			h, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k", ChecksumMode: true})
			if err != nil || h.Checksums.CRC64NVME == sent.Value || h.Size != int64(len(c.want)) {
				t.Errorf("head = %+v, %v", h, err)
			}
			// Without a checksum, nothing is echoed: the store's own CRC would give it away.
			out, err = s.PutObject(ctx, putIn(data))
			if err != nil || out.Checksums != (store.Checksums{}) {
				t.Errorf("no-checksum put: %+v, %v", out, err)
			}
		})
	}
}

func TestTruncatePart(t *testing.T) {
	t.Run("composite: store refuses the part checksum at Complete", func(t *testing.T) {
		inner := newInner(memstore.Rules{MinPartSize: 1})
		s := faulty.New(inner, faulty.Rule{Op: faulty.OpUploadPart, Part: 2, Fault: faulty.Truncate()})
		up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k", ChecksumAlgorithm: store.ChecksumSHA256})
		if err != nil {
			t.Fatal(err)
		}
		var parts []store.CompletedPart
		for n := int32(1); n <= 2; n++ {
			p := bytes.Repeat([]byte{byte('0' + n)}, 10)
			sha := sha256Checksum(p)
			out, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: up.UploadID, PartNumber: n,
				Body: bytes.NewReader(p), ContentLength: 10, ContentMD5: md5b64(p), Checksum: sha})
			if err != nil {
				t.Fatalf("part %d: %v", n, err)
			}
			if out.Checksums.SHA256 != sha.Value {
				t.Errorf("part %d echoed %+v, want the sent checksum", n, out.Checksums)
			}
			if n == 2 && out.ETag != md5hex(p[:5]) {
				t.Errorf("part 2 ETag %s, want md5 of the half stored", out.ETag)
			}
			parts = append(parts, store.CompletedPart{PartNumber: n, ETag: out.ETag, Checksum: sha})
		}
		lp, err := inner.ListParts(ctx, &store.ListPartsInput{Bucket: bkt, Key: "k", UploadID: up.UploadID})
		if err != nil || len(lp.Parts) != 2 || lp.Parts[0].Size != 10 || lp.Parts[1].Size != 5 {
			t.Fatalf("inner parts = %+v, %v", lp, err)
		}
		_, err = s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: up.UploadID, Parts: parts})
		wantResp(t, err, 400, "InvalidPart")
		if inj := s.Injected(); len(inj) != 1 || inj[0].Part != 2 || inj[0].Fault != faulty.Truncate() {
			t.Errorf("Injected = %+v", inj)
		}
	})
	t.Run("full object: store refuses the object checksum at Complete", func(t *testing.T) {
		inner := newInner(memstore.Rules{MinPartSize: 1})
		s := faulty.New(inner, faulty.Rule{Op: faulty.OpUploadPart, Part: 1, Fault: faulty.FlipByte()})
		up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k", ChecksumAlgorithm: store.ChecksumCRC64NVME})
		if err != nil {
			t.Fatal(err)
		}
		p1, p2 := []byte("first part"), []byte("second")
		var parts []store.CompletedPart
		for i, p := range [][]byte{p1, p2} {
			out, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: up.UploadID, PartNumber: int32(i + 1),
				Body: bytes.NewReader(p), ContentLength: int64(len(p)), Checksum: crc64(t, p)})
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, store.CompletedPart{PartNumber: int32(i + 1), ETag: out.ETag})
		}
		_, err = s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: up.UploadID, Parts: parts,
			FullObjectChecksum: crc64(t, append(bytes.Clone(p1), p2...)), ChecksumType: store.ChecksumTypeFullObject})
		wantResp(t, err, 400, "BadDigest")
	})
}

func sha256Checksum(p []byte) store.Checksum {
	d := sha256.Sum256(p)
	return store.Checksum{Algorithm: store.ChecksumSHA256, Value: base64.StdEncoding.EncodeToString(d[:])}
}

func TestHang(t *testing.T) {
	inner := newInner(memstore.Rules{})
	s := faulty.New(inner, faulty.First(faulty.OpHeadObject, 1, faulty.Hang()))
	// start before the deadline is set, so the deadline is never earlier than start + 20 ms (a
	// loaded machine once put 2 ms between the two).
	start := time.Now()
	c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := s.HeadObject(c, &store.HeadObjectInput{Bucket: bkt, Key: "k"})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("err = %v after %v, want DeadlineExceeded after the timeout", err, time.Since(start))
	}
	if inner.Requests(faulty.OpHeadObject) != 0 {
		t.Error("inner store was called")
	}
}

func TestRuleMatching(t *testing.T) {
	inner := newInner(memstore.Rules{MinPartSize: 1})
	s := faulty.New(inner,
		faulty.Rule{Op: faulty.OpUploadPart, Part: 3, Times: 2, Fault: faulty.SlowDown()},
		faulty.Rule{Op: faulty.OpPutObject, KeyPrefix: "logs/", Skip: 1, Times: 1, Fault: faulty.InternalError()},
		faulty.Always(faulty.AnyOp, faulty.EntityTooSmall()),  // applies to Complete only
		faulty.Always(faulty.OpHeadObject, faulty.Truncate()), // never applies
	)
	up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k"})
	if err != nil {
		t.Fatalf("Create faulted: %v", err)
	}
	part := func(n int32) error {
		_, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: up.UploadID, PartNumber: n, Body: strings.NewReader("x"), ContentLength: 1})
		return err
	}
	for _, c := range []struct {
		n    int32
		fail bool
	}{{1, false}, {3, true}, {2, false}, {3, true}, {3, false}, {1, false}} {
		if err := part(c.n); (err != nil) != c.fail {
			t.Errorf("part %d: err = %v, want failure %v", c.n, err, c.fail)
		}
	}
	put := func(key string) error {
		_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: key, Body: strings.NewReader("x"), ContentLength: 1})
		return err
	}
	for i, c := range []struct {
		key  string
		fail bool
	}{{"logs/a", false}, {"data/a", false}, {"logs/b", true}, {"logs/c", false}} {
		if err := put(c.key); (err != nil) != c.fail {
			t.Errorf("put %d %s: err = %v, want failure %v", i, c.key, err, c.fail)
		}
	}
	if _, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "logs/a"}); err != nil {
		t.Errorf("head faulted: %v", err)
	}
	_, err = s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: up.UploadID, Parts: []store.CompletedPart{{PartNumber: 1, ETag: "x"}}})
	wantResp(t, err, 400, "EntityTooSmall")
	var got []string
	for _, i := range s.Injected() {
		got = append(got, fmt.Sprintf("%s/%s/%d/%s/%d", i.Op, i.Key, i.Part, i.Fault, i.Rule))
	}
	want := []string{"UploadPart/k/3/SlowDown/0", "UploadPart/k/3/SlowDown/0", "PutObject/logs/b/0/InternalError/1", "CompleteMultipartUpload/k/0/EntityTooSmall/2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Injected:\n got %v\nwant %v", got, want)
	}
	if s := s.Injected()[0].String(); !strings.Contains(s, "SlowDown") || !strings.Contains(s, "part 3") {
		t.Errorf("Injection.String() = %q", s)
	}
}

func TestNotFaulted(t *testing.T) {
	inner := newInner(memstore.Rules{})
	s := faulty.New(inner, faulty.Always(faulty.AnyOp, faulty.SlowDown()), faulty.Always(faulty.AnyOp, faulty.Truncate()))
	// Invalid input is refused as the contract says, never faulted.
	if _, err := s.PutObject(ctx, nil); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("nil input: %v", err)
	}
	if _, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "k"}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("invalid part: %v", err)
	}
	// A done context reaches the inner store, which reports it.
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.HeadObject(c, &store.HeadObjectInput{Bucket: bkt, Key: "k"}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	if n := len(s.Injected()); n != 0 {
		t.Errorf("%d injections, want 0", n)
	}
	// An empty body has nothing to truncate; SlowDown (the first rule) still fires.
	_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: bytes.NewReader(nil)})
	wantResp(t, err, 503, "SlowDown")
	// A zero Fault and a nil inner store do not panic.
	z := faulty.New(nil, faulty.Rule{Op: faulty.AnyOp})
	if _, err := z.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k"}); err == nil {
		t.Error("nil inner store: no error")
	}
	if zero := (faulty.Fault{}); zero.String() != "NoFault" || zero.AppliesTo(faulty.OpPutObject) {
		t.Error("zero Fault")
	}
	for _, f := range faulty.All() {
		if f.String() == "" || f.String() == "NoFault" {
			t.Errorf("fault %#v has no name", f)
		}
	}
}

// campaign runs a fixed sequential workload and returns what was injected.
func campaign(t *testing.T, rule faulty.Rule) []string {
	t.Helper()
	s := faulty.New(newInner(memstore.Rules{MinPartSize: 1}), rule)
	for i := range 50 {
		key := fmt.Sprintf("k%d", i)
		_, _ = s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: key, Body: strings.NewReader("hello"), ContentLength: 5})
		_, _ = s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: key})
		_, _ = s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: key, UploadID: "u", Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e"}}})
	}
	var out []string
	for _, i := range s.Injected() {
		if !i.Fault.AppliesTo(i.Op) {
			t.Errorf("%v injected into %s", i.Fault, i.Op)
		}
		out = append(out, i.Op+":"+i.Key+":"+i.Fault.String())
	}
	return out
}

func TestRandom(t *testing.T) {
	faults := []faulty.Fault{faulty.SlowDown(), faulty.Truncate(), faulty.EntityTooSmall(), faulty.DropResponse()}
	a := campaign(t, faulty.Random(42, 0.3, faults...))
	b := campaign(t, faulty.Random(42, 0.3, faults...))
	if len(a) == 0 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed, different campaigns:\n%v\n%v", a, b)
	}
	if c := campaign(t, faulty.Random(43, 0.3, faults...)); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("different seeds, same campaign")
	}
	if n := len(campaign(t, faulty.Random(1, 0, faults...))); n != 0 {
		t.Errorf("probability 0: %d injections", n)
	}
	if n := len(campaign(t, faulty.Random(1, 1, faults...))); n != 150 {
		t.Errorf("probability 1: %d injections, want 150", n)
	}
	if n := len(campaign(t, faulty.Random(1, 1))); n != 0 {
		t.Errorf("no faults: %d injections", n)
	}
	only := faulty.Random(7, 1, faults...)
	only.Op = faulty.OpHeadObject
	for _, inj := range campaign(t, only) {
		if !strings.HasPrefix(inj, "HeadObject:") {
			t.Errorf("narrowed rule injected %s", inj)
		}
	}
}

// TestConcurrent hammers one Store from many goroutines; -race checks the locking.
func TestConcurrent(t *testing.T) {
	inner := newInner(memstore.Rules{MinPartSize: 1})
	s := faulty.New(inner, faulty.Random(9, 0.5, faulty.All()...), faulty.First(faulty.OpPutObject, 10, faulty.SlowDown()))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				key := fmt.Sprintf("g%d/%d", g, i)
				c, cancel := context.WithTimeout(ctx, 5*time.Millisecond) // bounds Hang
				_, _ = s.PutObject(c, &store.PutObjectInput{Bucket: bkt, Key: key, Body: strings.NewReader("payload"), ContentLength: 7})
				_, _ = s.HeadObject(c, &store.HeadObjectInput{Bucket: bkt, Key: key})
				_ = s.Injected()
				cancel()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, f := range faulty.All() {
		total += s.Count(f)
	}
	if total != len(s.Injected()) || total == 0 {
		t.Errorf("counts %d vs %d injections", total, len(s.Injected()))
	}
}

// TestEveryOperation checks each method's wiring: a response fault carries the method's Op, a
// lost response still reaches the inner store once, and a nil inner store errors.
func TestEveryOperation(t *testing.T) {
	type opCall func(s store.Store, uploadID string) error
	calls := map[string]opCall{
		faulty.OpPutObject: func(s store.Store, _ string) error {
			_, err := s.PutObject(ctx, putIn([]byte("x")))
			return err
		},
		faulty.OpCreateMultipartUpload: func(s store.Store, _ string) error {
			_, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k"})
			return err
		},
		faulty.OpUploadPart: func(s store.Store, id string) error {
			_, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: id, PartNumber: 1, Body: strings.NewReader("x"), ContentLength: 1})
			return err
		},
		faulty.OpListParts: func(s store.Store, id string) error {
			_, err := s.ListParts(ctx, &store.ListPartsInput{Bucket: bkt, Key: "k", UploadID: id})
			return err
		},
		faulty.OpCompleteMultipart: func(s store.Store, id string) error {
			_, err := s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: id, Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e"}}})
			return err
		},
		faulty.OpAbortMultipart: func(s store.Store, id string) error {
			return s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: id})
		},
		faulty.OpHeadObject: func(s store.Store, _ string) error {
			_, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k"})
			return err
		},
		faulty.OpGetObject: func(s store.Store, _ string) error {
			out, err := s.GetObject(ctx, &store.GetObjectInput{Bucket: bkt, Key: "k"})
			if err == nil {
				_ = out.Body.Close()
			}
			return err
		},
		faulty.OpDeleteObject: func(s store.Store, _ string) error {
			return s.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: bkt, Key: "k"})
		},
		faulty.OpListMultipartUploads: func(s store.Store, _ string) error {
			_, err := s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bkt})
			return err
		},
	}
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			inner := newInner(memstore.Rules{})
			up, err := inner.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k"})
			if err != nil {
				t.Fatal(err)
			}
			before := inner.Requests(op)
			s := faulty.New(inner, faulty.Nth(op, 1, faulty.InternalError()), faulty.Nth(op, 2, faulty.DropResponse()))
			err = call(s, up.UploadID)
			var re *store.ResponseError
			if !errors.As(err, &re) || re.Op != op || re.StatusCode != 500 {
				t.Errorf("InternalError: err = %v, want a 500 for %s", err, op)
			}
			if inner.Requests(op) != before {
				t.Errorf("InternalError reached the inner store")
			}
			err = call(s, up.UploadID)
			wantNoResp(t, err)
			if !errors.Is(err, io.ErrUnexpectedEOF) || inner.Requests(op) != before+1 {
				t.Errorf("DropResponse: err = %v, inner calls %d, want 1", err, inner.Requests(op)-before)
			}
			if err := call(faulty.New(nil), "u"); err == nil {
				t.Error("nil inner store: no error")
			}
		})
	}
}
