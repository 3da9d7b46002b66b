package faultproxy

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Content-MD5 is what the test sends, not a security use
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/goleak"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
)

func TestMain(m *testing.M) {
	// Idle keep-alive connections of the test's SDK clients are theirs, not the proxy's.
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}

// callBound is every adapter call's deadline: faults that hang end here.
const callBound = 3 * time.Second

// wire is one adapter talking to the real server through a fresh proxy.
type wire struct {
	srv    s3test.Server
	proxy  *Proxy
	st     store.Store
	bucket string
}

// forEachAdapter runs fn per adapter with its own proxy and bucket; extra configures the proxy.
func forEachAdapter(t *testing.T, fn func(t *testing.T, w wire)) {
	t.Helper()
	srv := s3test.Require(t)
	for _, a := range testkit.Adapters {
		t.Run(a.Name, func(t *testing.T) {
			w := wire{srv: srv, bucket: s3test.NewBucket(t, srv)}
			w.proxy = startProxy(t, srv, nil)
			viaProxy := srv
			viaProxy.Endpoint = w.proxy.URL()
			st, err := a.New(viaProxy)
			if err != nil {
				t.Fatalf("%s adapter: %v", a.Name, err)
			}
			w.st = st
			fn(t, w)
		})
	}
}

func startProxy(t *testing.T, srv s3test.Server, logf func(string, ...any)) *Proxy {
	t.Helper()
	if logf == nil {
		logf = t.Logf
	}
	p, err := Start(Config{Upstream: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Region: srv.Region, Seed: 1, Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), callBound)
	t.Cleanup(cancel)
	return ctx
}

func (w wire) put(t *testing.T, key string, data []byte, checksum bool) (*store.PutObjectOutput, error) {
	in := &store.PutObjectInput{Bucket: w.bucket, Key: key, Body: bytes.NewReader(data), ContentLength: int64(len(data))}
	if checksum {
		in.Checksum = crc32Checksum(data)
	}
	return w.st.PutObject(callCtx(t), in)
}

// wantInjected checks the proxy injected exactly one fault of kind on op for key.
func (w wire) wantInjected(t *testing.T, op Op, kind Kind, key string) {
	t.Helper()
	inj := w.proxy.Injected()
	if len(inj) != 1 || inj[0].Op != op || inj[0].Kind != kind || inj[0].Bucket != w.bucket || inj[0].Key != key {
		t.Fatalf("injected %+v, want one %s on %s %s/%s", inj, kind, op, w.bucket, key)
	}
}

func wantNoAnswer(t *testing.T, err error) {
	t.Helper()
	var re *store.ResponseError
	if err == nil || errors.As(err, &re) {
		t.Fatalf("err = %v, want a transport error (no answer)", err)
	}
}

func TestResetAfterBytes(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		w.proxy.SetRules(Rule{Op: PutObject, Fault: Fault{Kind: ResetAfterBytes, Bytes: 1000}})
		_, err := w.put(t, "k", s3test.RandomBytes(256<<10), false)
		wantNoAnswer(t, err)
		t.Logf("error: %v", err)
		w.wantInjected(t, PutObject, ResetAfterBytes, "k")
		if s3test.Exists(t, w.srv, w.bucket, "k") {
			t.Error("the object exists upstream after a reset mid-body")
		}
	})
}

func TestDropResponse(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		data := s3test.RandomBytes(100 << 10)
		w.proxy.SetRules(Rule{Op: PutObject, Fault: Fault{Kind: DropResponse}})
		_, err := w.put(t, "k", data, true)
		wantNoAnswer(t, err)
		t.Logf("error: %v", err)
		w.wantInjected(t, PutObject, DropResponse, "k")
		if got := s3test.ReadAll(t, w.srv, w.bucket, "k"); !bytes.Equal(got, data) {
			t.Errorf("upstream holds %d bytes, want the %d sent: the store should have committed", len(got), len(data))
		}
	})
}

func TestHoldForAWhile(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		data := s3test.RandomBytes(64 << 10)
		w.proxy.SetRules(Rule{Op: PutObject, Fault: Fault{Kind: Hold, Hold: 300 * time.Millisecond}})
		if _, err := w.put(t, "k", data, false); err != nil {
			t.Fatalf("a held PutObject must land late, got %v", err)
		}
		w.wantInjected(t, PutObject, Hold, "k")
		if got := s3test.ReadAll(t, w.srv, w.bucket, "k"); !bytes.Equal(got, data) {
			t.Error("object read back differs from what was sent")
		}
	})
}

func TestHoldForever(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		w.proxy.SetRules(Rule{Op: PutObject, Fault: Fault{Kind: Hold}})
		_, err := w.put(t, "k", s3test.RandomBytes(64<<10), false)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the caller's deadline", err)
		}
		if s3test.Exists(t, w.srv, w.bucket, "k") {
			t.Error("a request held forever reached the store")
		}
		closeWithinBound(t, w.proxy)
	})
}

func TestStopReading(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		w.proxy.SetRules(Rule{Op: PutObject, Fault: Fault{Kind: StopReading}})
		// Larger than loopback socket buffers, so the client's writes really block.
		_, err := w.put(t, "k", s3test.RandomBytes(16<<20), false)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the caller's deadline", err)
		}
		w.wantInjected(t, PutObject, StopReading, "k")
		if s3test.Exists(t, w.srv, w.bucket, "k") {
			t.Error("a request whose body was never read reached the store")
		}
		closeWithinBound(t, w.proxy)
	})
}

func closeWithinBound(t *testing.T, p *Proxy) {
	t.Helper()
	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v, want it prompt", d)
	}
}

func TestStatus(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		w.proxy.SetRules(
			Rule{Op: PutObject, Fault: Fault{Kind: Status, Status: 503, Code: "SlowDown", RetryAfter: "3"}},
			Rule{Op: CreateMultipartUpload, Fault: Fault{Kind: Status, Status: 500, Code: "InternalError"}},
			Rule{Op: HeadObject, Fault: Fault{Kind: Status, Status: 429}},
		)
		_, err := w.put(t, "k", s3test.RandomBytes(1<<20), true)
		wantResponse(t, err, 503, "SlowDown", 3*time.Second)
		_, err = w.st.CreateMultipartUpload(callCtx(t), &store.CreateMultipartUploadInput{Bucket: w.bucket, Key: "k"})
		wantResponse(t, err, 500, "InternalError", 0)
		_, err = w.st.HeadObject(callCtx(t), &store.HeadObjectInput{Bucket: w.bucket, Key: "k"})
		wantResponse(t, err, 429, "", 0) // HEAD answers carry no body, so no code
		if s := w.proxy.Stats(); s.Injected[Status] != 3 {
			t.Errorf("stats %+v, want 3 Status faults", s)
		}
		if s3test.Exists(t, w.srv, w.bucket, "k") {
			t.Error("a request answered by the proxy reached the store")
		}
	})
}

// AnswerEarly answers before taking the body: the client gets the answer (not a broken
// connection) while its transport may still be sending, and nothing is stored.
func TestAnswerEarly(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		w.proxy.SetRules(Rule{Op: PutObject, Fault: Fault{Kind: AnswerEarly, Code: "SlowDown"}})
		_, err := w.put(t, "k", s3test.RandomBytes(8<<20), true) // far more than the socket buffers hold
		wantResponse(t, err, 503, "SlowDown", 0)
		w.wantInjected(t, PutObject, AnswerEarly, "k")
		if s3test.Exists(t, w.srv, w.bucket, "k") {
			t.Error("a request answered by the proxy reached the store")
		}
	})
}

func wantResponse(t *testing.T, err error, status int, code string, retryAfter time.Duration) {
	t.Helper()
	var re *store.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a *store.ResponseError", err)
	}
	if re.StatusCode != status || re.Code != code || re.RetryAfter != retryAfter {
		t.Errorf("got status %d code %q retry-after %v, want %d %q %v", re.StatusCode, re.Code, re.RetryAfter, status, code, retryAfter)
	}
}

func TestRuleSelectsPart(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		id := w.create(t, "k")
		w.proxy.SetRules(Rule{Op: UploadPart, PartNumber: 2, Fault: Fault{Kind: Status, Status: 500, Code: "InternalError"}})
		for n := int32(1); n <= 3; n++ {
			_, err := w.uploadPart(t, "k", id, n, s3test.RandomBytes(1024))
			if n == 2 {
				wantResponse(t, err, 500, "InternalError", 0)
			} else if err != nil {
				t.Errorf("part %d: %v", n, err)
			}
		}
		inj := w.proxy.Injected()
		want := Injection{Op: UploadPart, Kind: Status, Bucket: w.bucket, Key: "k", PartNumber: 2, UploadID: id}
		if len(inj) != 1 || inj[0].Time.IsZero() {
			t.Fatalf("injected %+v, want one with its time", inj)
		}
		got := inj[0]
		got.Time = time.Time{}
		if got != want {
			t.Errorf("injected %+v, want %+v", got, want)
		}
		if err := w.st.AbortMultipartUpload(callCtx(t), &store.AbortMultipartUploadInput{Bucket: w.bucket, Key: "k", UploadID: id}); err != nil {
			t.Fatal(err)
		}
		if ids := s3test.IncompleteUploads(t, w.srv, w.bucket, ""); len(ids) != 0 {
			t.Errorf("uploads left: %v", ids)
		}
	})
}

func (w wire) create(t *testing.T, key string) string {
	t.Helper()
	out, err := w.st.CreateMultipartUpload(callCtx(t), &store.CreateMultipartUploadInput{Bucket: w.bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return out.UploadID
}

func (w wire) uploadPart(t *testing.T, key, id string, n int32, data []byte) (*store.UploadPartOutput, error) {
	sum := md5.Sum(data) //nolint:gosec // Content-MD5
	return w.st.UploadPart(callCtx(t), &store.UploadPartInput{
		Bucket: w.bucket, Key: key, UploadID: id, PartNumber: n,
		Body: bytes.NewReader(data), ContentLength: int64(len(data)), ContentMD5: base64.StdEncoding.EncodeToString(sum[:]),
	})
}

// oneByteFlipped checks got is want with exactly its middle byte changed.
func oneByteFlipped(t *testing.T, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("stored %d bytes, sent %d", len(got), len(want))
	}
	var diff []int
	for i := range got {
		if got[i] != want[i] {
			diff = append(diff, i)
		}
	}
	if len(diff) != 1 || diff[0] != len(want)/2 {
		t.Errorf("stored object differs from the sent bytes at %v, want only at %d", diff, len(want)/2)
	}
}

func TestStoreFlipped(t *testing.T) {
	t.Run("PutObject", func(t *testing.T) {
		forEachAdapter(t, func(t *testing.T, w wire) {
			data := s3test.RandomBytes(300 << 10)
			w.proxy.SetRules(Rule{Op: PutObject, Fault: Fault{Kind: StoreFlipped}})
			out, err := w.put(t, "k", data, true) // the CRC32 header must go for the store to take it
			if err != nil || out.ETag == "" {
				t.Fatalf("PutObject = %+v, %v; want a 200 with an ETag", out, err)
			}
			w.wantInjected(t, PutObject, StoreFlipped, "k")
			oneByteFlipped(t, s3test.ReadAll(t, w.srv, w.bucket, "k"), data)
		})
	})
	t.Run("UploadPart", func(t *testing.T) {
		forEachAdapter(t, func(t *testing.T, w wire) {
			data := s3test.RandomBytes(300 << 10)
			id := w.create(t, "k")
			w.proxy.SetRules(Rule{Op: UploadPart, Fault: Fault{Kind: StoreFlipped}})
			part, err := w.uploadPart(t, "k", id, 1, data) // Content-MD5 must go too
			if err != nil {
				t.Fatalf("UploadPart: %v; want a 200", err)
			}
			_, err = w.st.CompleteMultipartUpload(callCtx(t), &store.CompleteMultipartUploadInput{
				Bucket: w.bucket, Key: "k", UploadID: id, Parts: []store.CompletedPart{{PartNumber: 1, ETag: part.ETag}},
			})
			if err != nil {
				t.Fatalf("Complete with the ETag the store returned: %v", err)
			}
			oneByteFlipped(t, s3test.ReadAll(t, w.srv, w.bucket, "k"), data)
		})
	})
}

// TestStoreFlippedChecksummedPart shows why Rechecksum exists: on an upload created with a
// checksum algorithm (what the writer does) the server refuses a part whose checksum was
// dropped, and with the checksum recomputed it stores the altered part and says so only through
// the checksum it answers.
func TestStoreFlippedChecksummedPart(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		if w.srv.IgnoresChecksums() {
			// The premise (a server that checks the part's checksum) does not hold; the contract
			// suite asserts that such a server ignores the header.
			t.Skipf("%s ignores checksum headers", w.srv.Name)
		}
		data := s3test.RandomBytes(100 << 10)
		sent := crc32Checksum(data)
		upload := func(key string, rechecksum bool) (string, *store.UploadPartOutput, error) {
			out, err := w.st.CreateMultipartUpload(callCtx(t), &store.CreateMultipartUploadInput{Bucket: w.bucket, Key: key,
				ChecksumAlgorithm: store.ChecksumCRC32, ChecksumType: store.ChecksumTypeComposite})
			if err != nil {
				t.Fatal(err)
			}
			w.proxy.SetRules(Rule{Op: UploadPart, Fault: Fault{Kind: StoreFlipped, Rechecksum: rechecksum}})
			part, err := w.st.UploadPart(callCtx(t), &store.UploadPartInput{Bucket: w.bucket, Key: key, UploadID: out.UploadID,
				PartNumber: 1, Body: bytes.NewReader(data), ContentLength: int64(len(data)), Checksum: sent})
			return out.UploadID, part, err
		}

		_, _, err := upload("dropped", false)
		refused := "InvalidRequest"
		if w.srv.Name == s3test.MinIO {
			refused = "InvalidArgument" // MinIO's code for the same refusal
		}
		wantResponse(t, err, 400, refused, 0)

		id, part, err := upload("rechecksummed", true)
		if err != nil {
			t.Fatalf("UploadPart with the checksum recomputed: %v; want a 200", err)
		}
		if part.Checksums.CRC32 == "" || part.Checksums.CRC32 == sent.Value {
			t.Errorf("the store answered CRC32 %q, want the altered part's, not the %q sent", part.Checksums.CRC32, sent.Value)
		}
		_, err = w.st.CompleteMultipartUpload(callCtx(t), &store.CompleteMultipartUploadInput{Bucket: w.bucket, Key: "rechecksummed", UploadID: id,
			ChecksumType: store.ChecksumTypeComposite, Parts: []store.CompletedPart{{PartNumber: 1, ETag: part.ETag, Checksum: sent}}})
		wantResponse(t, err, 400, "InvalidPart", 0)
		for _, u := range s3test.IncompleteUploads(t, w.srv, w.bucket, "") {
			key, id, _ := strings.Cut(u, "@")
			if err := w.st.AbortMultipartUpload(callCtx(t), &store.AbortMultipartUploadInput{Bucket: w.bucket, Key: key, UploadID: id}); err != nil {
				t.Error(err)
			}
		}
	})
}

func crc32Checksum(data []byte) store.Checksum {
	sum := binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(data))
	return store.Checksum{Algorithm: store.ChecksumCRC32, Value: base64.StdEncoding.EncodeToString(sum)}
}

func TestStoreTruncated(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		data := s3test.RandomBytes(300<<10 + 1)
		w.proxy.SetRules(Rule{Op: PutObject, Fault: Fault{Kind: StoreTruncated}})
		// No checksum: the aws adapter and the minio adapter both sign the body's SHA-256.
		if out, err := w.put(t, "k", data, false); err != nil || out.ETag == "" {
			t.Fatalf("PutObject = %+v, %v; want a 200 with an ETag", out, err)
		}
		got := s3test.ReadAll(t, w.srv, w.bucket, "k")
		if len(got) >= len(data) || !bytes.Equal(got, data[:len(got)]) {
			t.Errorf("stored %d bytes, want a strict prefix of the %d sent", len(got), len(data))
		}
	})
}

func TestCutResponse(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		data := s3test.RandomBytes(1 << 20)
		ctx := callCtx(t)
		if _, err := w.srv.RawClient().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(w.bucket), Key: aws.String("k"), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
		w.proxy.SetRules(Rule{Op: GetObject, Fault: Fault{Kind: CutResponse}})
		out, err := w.st.GetObject(ctx, &store.GetObjectInput{Bucket: w.bucket, Key: "k"})
		if err != nil {
			t.Fatalf("GetObject: %v; the status and headers arrive whole", err)
		}
		defer func() { _ = out.Body.Close() }()
		got, err := io.ReadAll(out.Body)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("reading the body: %v after %d bytes, want unexpected EOF", err, len(got))
		}
		if out.Size != int64(len(data)) || len(got) >= len(data) || !bytes.Equal(got, data[:len(got)]) {
			t.Errorf("size %d, read %d bytes: want the full size announced and a strict prefix read", out.Size, len(got))
		}
	})
}

// TestCloseReleasesEverything parks requests in every blocking fault, with no client deadline,
// and checks Close ends them all promptly and leaves no goroutine behind.
func TestCloseReleasesEverything(t *testing.T) {
	srv := s3test.Require(t)
	leaks := goleak.IgnoreCurrent()
	bucket := s3test.NewBucket(t, srv)
	arrived := make(chan Kind, 16)
	p, err := Start(Config{Upstream: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Region: srv.Region,
		// The proxy logs an injection with its Kind first; that tells the test the request arrived.
		Logf: func(_ string, args ...any) {
			if k, ok := firstArg(args).(Kind); ok {
				arrived <- k
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	p.SetRules(
		Rule{Op: PutObject, Fault: Fault{Kind: Hold}},
		Rule{Op: UploadPart, Fault: Fault{Kind: StopReading, Bytes: 1 << 20}},
	)
	viaProxy := srv
	viaProxy.Endpoint = p.URL()
	errs := make(chan error, 4)
	for _, a := range testkit.Adapters {
		st, err := a.New(viaProxy)
		if err != nil {
			t.Fatal(err)
		}
		data := s3test.RandomBytes(16 << 20)
		go func() {
			_, err := st.PutObject(context.Background(), &store.PutObjectInput{Bucket: bucket, Key: "held", Body: bytes.NewReader(data), ContentLength: int64(len(data))})
			errs <- err
		}()
		go func() {
			_, err := st.UploadPart(context.Background(), &store.UploadPartInput{Bucket: bucket, Key: "stalled", UploadID: "none", PartNumber: 1, Body: bytes.NewReader(data), ContentLength: int64(len(data))})
			errs <- err
		}()
	}
	for range 4 {
		<-arrived
	}
	closeWithinBound(t, p)
	for range 4 {
		select {
		case err := <-errs:
			if err == nil {
				t.Error("a request parked by the proxy succeeded")
			}
		case <-time.After(callBound):
			t.Fatal("a client call still runs after Close")
		}
	}
	goleak.VerifyNone(t, leaks,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

func firstArg(args []any) any {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}

// IgnorePrefix plays a store that lists every incomplete upload whatever prefix is asked: a
// listing for a prefix no upload has returns the bucket's uploads, answered 200 to a request
// signed again.
func TestIgnorePrefix(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, w wire) {
		c := w.srv.RawClient()
		for _, key := range []string{"in/a", "other/b"} {
			if _, err := c.CreateMultipartUpload(callCtx(t), &s3.CreateMultipartUploadInput{Bucket: aws.String(w.bucket), Key: aws.String(key)}); err != nil {
				t.Fatal(err)
			}
		}
		in := &store.ListMultipartUploadsInput{Bucket: w.bucket, Prefix: "nothing-here/"}
		if out, err := w.st.ListMultipartUploads(callCtx(t), in); err != nil || len(out.Uploads) != 0 {
			t.Fatalf("listing without the fault: %+v, %v; want nothing", out, err)
		}
		w.proxy.SetRules(Rule{Op: ListMultipartUploads, Fault: Fault{Kind: IgnorePrefix}})
		out, err := w.st.ListMultipartUploads(callCtx(t), in)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, u := range out.Uploads {
			keys = append(keys, u.Key)
		}
		if strings.Join(keys, ",") != "in/a,other/b" {
			t.Errorf("listed %v, want every upload of the bucket", keys)
		}
		if n := w.proxy.Stats().Injected[IgnorePrefix]; n != 1 {
			t.Errorf("injected %d, want 1", n)
		}
	})
}
