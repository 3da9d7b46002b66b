package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
)

func TestParseS3URL(t *testing.T) {
	good := []struct {
		in, bucket, key string
		needKey         bool
	}{
		{"s3://bucket/key", "bucket", "key", true},
		{"s3://bucket/a/b?c#d%20", "bucket", "a/b?c#d%20", true},
		{"s3://bucket", "bucket", "", false},
		{"s3://bucket/", "bucket", "", false},
		{"s3://my.bucket_1/pre/", "my.bucket_1", "pre/", false},
	}
	for _, c := range good {
		u, err := parseS3URL(c.in, c.needKey)
		if err != nil || u.Bucket != c.bucket || u.Key != c.key {
			t.Errorf("parseS3URL(%q) = %+v, %v", c.in, u, err)
		}
	}
	for _, in := range []string{"", "bucket/key", "s3:/bucket/key", "S3://bucket/key", "s3:///key", "s3://b/key", "s3://bad bucket/k", "s3://bucket", "s3://bucket/", "s3://bucket/\xff"} {
		if _, err := parseS3URL(in, true); exitCodeFor(context.Background(), err) != exitUsage {
			t.Errorf("parseS3URL(%q): err %v, want a usage error", in, err)
		}
	}
}

func TestParsePauses(t *testing.T) {
	pauses, err := parsePauses("UploadPart:100ms, HeadObject:1s")
	if err != nil || len(pauses) != 2 || pauses["UploadPart"] != 100*time.Millisecond || pauses["HeadObject"] != time.Second {
		t.Fatalf("parsePauses = %v, %v", pauses, err)
	}
	for _, bad := range []string{"UploadPart", "UploadPart:soon", "UploadPart:-1s"} {
		if _, err := parsePauses(bad); exitCodeFor(context.Background(), err) != exitUsage {
			t.Errorf("parsePauses(%q): err %v, want a usage error", bad, err)
		}
	}
}

// The test build's --pause waits before the operations named, and no longer than the context.
func TestPausingStore(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"))
	var st store.Store = &pausingStore{Store: mem, pauses: map[string]time.Duration{"HeadObject": 200 * time.Millisecond}}
	in := &store.HeadObjectInput{Bucket: "b", Key: "k"}
	start := time.Now()
	if _, err := st.HeadObject(context.Background(), in); time.Since(start) < 200*time.Millisecond || mem.Requests("HeadObject") != 1 {
		t.Errorf("paused HeadObject answered %v after %v (%d requests), want the store's answer after 200ms", err, time.Since(start), mem.Requests("HeadObject"))
	}
	st = &pausingStore{Store: mem, pauses: map[string]time.Duration{"HeadObject": time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := st.HeadObject(ctx, in); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second || mem.Requests("HeadObject") != 1 {
		t.Errorf("HeadObject paused for a minute, deadline 10ms: %v after %v (%d requests), want the deadline at once and no request", err, time.Since(start), mem.Requests("HeadObject"))
	}
}

func TestExitCodeFor(t *testing.T) {
	want := map[sperrors.Kind]int{
		sperrors.Transient: 3, sperrors.Throttled: 3, sperrors.Permanent: 4, sperrors.Integrity: 5,
		sperrors.Compatibility: 6, sperrors.Precondition: 7, sperrors.Canceled: 8, sperrors.Internal: 1,
	}
	for k, code := range want {
		err := &sperrors.Error{Kind: k, Op: "PutObject"}
		if got := exitCodeFor(context.Background(), err); got != code {
			t.Errorf("%s: exit %d, want %d", k, got, code)
		}
	}
	if got := exitCodeFor(context.Background(), usageErr("x")); got != 2 {
		t.Errorf("usage: %d", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// After Ctrl-C even an error the writer classified otherwise is a cancellation.
	if got := exitCodeFor(ctx, &sperrors.Error{Kind: sperrors.Permanent, Err: context.Canceled}); got != 8 {
		t.Errorf("cancelled: %d", got)
	}
	if got := exitCodeFor(context.Background(), errors.New("plain")); got == 0 {
		t.Error("a plain error exits 0")
	}
}

func TestCompareProfile(t *testing.T) {
	aws, _ := multipart.Profile("aws")
	r2, _ := multipart.Profile("r2")
	strict, _ := multipart.Profile("strict")
	if safe, diffs := compareProfile(aws, aws); !safe || len(diffs) != 0 {
		t.Errorf("aws on aws: safe=%v diffs=%v", safe, diffs)
	}
	if safe, _ := compareProfile(strict, aws); !safe {
		t.Error("strict must be safe on an AWS-like store")
	}
	if safe, _ := compareProfile(r2, aws); !safe {
		t.Error("r2's stricter layout is safe on an AWS-like store")
	}
	if safe, _ := compareProfile(aws, r2); safe {
		t.Error("aws (unequal parts allowed) must not be safe on an R2-like store")
	}
	small := aws
	small.MinPartSize = 8 * bytesize.MiB
	if safe, _ := compareProfile(aws, small); safe {
		t.Error("5 MiB parts are not safe where the minimum is 8 MiB")
	}

	p := &prober{}
	p.recommend(aws)
	if p.rep.MatchedProfile != "aws" || p.rep.Recommendation != "aws" {
		t.Errorf("recommend(aws) = %+v", p.rep)
	}
	p = &prober{}
	p.recommend(small)
	if p.rep.MatchedProfile != "" || p.rep.Recommendation != p.rep.Rules {
		t.Errorf("recommend(8 MiB store) = %+v", p.rep)
	}
	if _, err := multipart.Parse(p.rep.Rules); err != nil {
		t.Errorf("the recommended rules string does not parse: %v", err)
	}
}
