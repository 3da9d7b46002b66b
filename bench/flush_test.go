package bench

import (
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/bench/internal/link"
	"github.com/safeput/safeput/storetest/s3test"
)

// TestFlushTiny runs the flush workload once at a tiny scale: every implementation, loopback and
// a short emulated link, each object read back and compared, and the section rendered from the
// records. It proves the workload works; it times nothing.
func TestFlushTiny(t *testing.T) {
	srv := s3test.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	links := []FlushLink{{Name: "loopback"}, {Name: "5ms link", Config: link.Config{RTT: 5 * time.Millisecond, Rate: 125_000_000, Window: 4 << 20}}}
	recs, err := RunFlush(ctx, FlushConfig{
		Server: srv, ServerName: "test", Bucket: s3test.NewBucket(t, srv), Links: links, Sizes: []int64{4 << 10},
		Workers: 2, Objects: 8, LinkObjects: 8, Runs: 1, Params: Params{Signing: SigningUnsigned}, Log: tlog{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(FlushImpls()) * len(links); len(recs) != want {
		t.Fatalf("got %d records, want %d (one per implementation and link)", len(recs), want)
	}
	for _, r := range recs {
		if r.Objects != 8 || len(r.Latencies) != 8 || r.Seconds <= 0 {
			t.Errorf("%s %s: %d objects, %d latencies, %v s", r.Link, r.Impl, r.Objects, len(r.Latencies), r.Seconds)
		}
		// safeput reports what it sent and what verified each object; the peers report nothing.
		if strings.HasPrefix(r.Impl, "safeput") && (r.Requests < r.Objects || len(r.VerifiedBy) == 0) {
			t.Errorf("%s %s: %d requests for %d objects, verified by %v", r.Link, r.Impl, r.Requests, r.Objects, r.VerifiedBy)
		}
	}
	md := FlushMarkdown(FlushEnv{Command: "test", Workers: 2, Runs: 1, Links: links, ServerName: "test"}, recs)
	for _, want := range []string{"### loopback, 4 KiB objects × 8", "### 5ms link, 4 KiB objects × 8", "| safeput-writer/minio |", "| s3.PutObject |"} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
}

// The table's figures come from the records: medians of the runs, percentiles over every object,
// and the targets against the fastest peer.
func TestFlushRows(t *testing.T) {
	lat := func(ms ...int) []time.Duration {
		var d []time.Duration
		for _, m := range ms {
			d = append(d, time.Duration(m)*time.Millisecond)
		}
		return d
	}
	recs := []FlushRecord{
		{Link: "l", Impl: "safeput/aws", Size: 1, Objects: 4, Seconds: 1, CPUSeconds: 0.004, Allocated: 4096, Latencies: lat(10, 10, 10, 50), Requests: 4, VerifiedBy: map[string]int{"md5 from PutObject": 4}},
		{Link: "l", Impl: "safeput/aws", Size: 1, Objects: 4, Seconds: 2, CPUSeconds: 0.008, Allocated: 4096, Latencies: lat(10, 10, 10, 10), Requests: 4, VerifiedBy: map[string]int{"md5 from PutObject": 4}},
		{Link: "l", Impl: "safeput/aws", Size: 1, Objects: 4, Seconds: 0.5, CPUSeconds: 0.002, Allocated: 4096, Latencies: lat(10, 10, 10, 10), Requests: 4, VerifiedBy: map[string]int{"md5 from PutObject": 4}},
		{Link: "l", Impl: "minio-go", Size: 1, Objects: 4, Seconds: 2, CPUSeconds: 0.002, Latencies: lat(5, 5, 5, 20)},
		{Link: "l", Impl: "minio-go+md5", Size: 1, Objects: 4, Seconds: 5, CPUSeconds: 0.003, Latencies: lat(6, 6, 6, 30)},
		{Link: "l", Impl: "manager", Size: 1, Objects: 4, Seconds: 4, CPUSeconds: 0.001, Latencies: lat(1, 1, 1, 1)},
	}
	rows := flushRows(recs, "l", 1)
	if len(rows) != 4 || rows[0].impl != "safeput/aws" || rows[1].impl != "minio-go" || rows[2].impl != "minio-go+md5" || rows[3].impl != "manager" {
		t.Fatalf("rows %+v: want safeput/aws, minio-go, minio-go+md5, manager in FlushImpls order", rows)
	}
	s := rows[0]
	// Rates 4, 2, 8 objects/s: median 4; CPU 1, 2, 0.5 ms/object: median 1; p99 over 12 objects: 50 ms.
	if s.rate != 4 || s.rateMin != 2 || s.rateMax != 8 || s.cpuMS != 1 || s.p99 != 50*time.Millisecond || s.p50 != 10*time.Millisecond || s.requests != 1 || s.allocKiB != 1 {
		t.Errorf("safeput row %+v", s)
	}
	// The fastest peer is minio-go (2 objects/s against manager's 1), though manager's CPU is lower.
	if s.vsBest != 2 || !s.rateMet || s.cpuMet || s.p99Met {
		t.Errorf("targets against minio-go: %+v; want 2×, rate met, CPU (1 > 0.5 ms) and p99 (50 > 20 ms) not", s)
	}
	// Of the peers only minio-go+md5 checks the body (0.8 objects/s): 4 / 0.8.
	if !s.hasChecked || s.vsChecked != 5 {
		t.Errorf("against the fastest checked peer: %+v; want 5×", s)
	}
	md := FlushMarkdown(FlushEnv{Command: "c", Workers: 2, Runs: 3, Links: []FlushLink{{Name: "l"}}}, recs)
	for _, want := range []string{
		"| safeput/aws | 4 | 2–8 | 10.0 | 50.0 | 1.000 | – | 1 | 1.00 | 2.00× | 5.00× | rate ✓, CPU ✗, p99 ✗ | md5 from PutObject |",
		"| minio-go | 2 | 2–2 | 5.0 | 20.0 | 0.500 | – | 0 | – | 1.00× | 2.50× |  |  |",
		"Rows that missed a target in this run (✗ above): l 1 B safeput/aws.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
}

// CutFlush takes back what SpliceFlush put in, and other sections stay as they were.
func TestSpliceFlush(t *testing.T) {
	doc := SpliceWAN("# Benchmarks\n\nintro\n", "wan rows\n")
	twice := SpliceFlush(SpliceFlush(doc, "old flush\n"), "## A flush of small objects\n\nnew\n")
	rest, sec := CutFlush(twice)
	if strings.TrimRight(rest, "\n") != strings.TrimRight(doc, "\n") || sec != "## A flush of small objects\n\nnew\n" {
		t.Fatalf("CutFlush: rest %q, section %q", rest, sec)
	}
}

// The legend's checksum column is what each implementation's PutObject carries at its defaults,
// seen by a server that answers as S3 does (an MD5 ETag, so safeput needs no HEAD).
func TestFlushChecksumHeaders(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPut {
			t.Errorf("%s %s: want only the PutObject", r.Method, r.URL)
			w.WriteHeader(http.StatusNotImplemented)
			return
		}
		var got []string
		for k := range r.Header {
			if k := strings.ToLower(k); strings.HasPrefix(k, "x-amz-checksum-") && k != "x-amz-checksum-algorithm" || k == "content-md5" {
				got = append(got, k)
			}
		}
		if tr := strings.ToLower(r.Header.Get("X-Amz-Trailer")); tr != "" {
			got = append(got, tr+" (trailer)")
		}
		sum := md5.Sum(body) //nolint:gosec // an S3 ETag
		mu.Lock()
		sent = got
		mu.Unlock()
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
	}))
	defer srv.Close()
	at := s3test.Server{Endpoint: srv.URL, Region: "us-east-1", AccessKey: "a", SecretKey: "b"}
	for _, im := range FlushImpls() {
		put, err := im.New(at, "bucket", Params{Signing: SigningUnsigned})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := put(context.Background(), "key", []byte("a small object")); err != nil {
			t.Fatalf("%s: %v", im.Name, err)
		}
		mu.Lock()
		got := strings.Join(sent, ",")
		mu.Unlock()
		if got != im.Checksum {
			t.Errorf("%s sent checksum headers %q, its legend says %q", im.Name, got, im.Checksum)
		}
	}
}
