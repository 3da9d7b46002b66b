package multipart_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
)

// execute uploads data as the layout sizes describe, straight through a Store adapter, and
// returns the Complete error (nil when the server accepted the layout).
func execute(t *testing.T, env testkit.Env, key string, data []byte, sizes []int64) error {
	t.Helper()
	ctx := context.Background()
	created, err := env.Store.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: env.Bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	var parts []store.CompletedPart
	off := int64(0)
	for i, n := range sizes {
		out, err := env.Store.UploadPart(ctx, &store.UploadPartInput{Bucket: env.Bucket, Key: key, UploadID: created.UploadID,
			PartNumber: int32(i + 1), Body: bytes.NewReader(data[off : off+n]), ContentLength: n})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, store.CompletedPart{PartNumber: int32(i + 1), ETag: out.ETag})
		off += n
	}
	_, err = env.Store.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: env.Bucket, Key: key, UploadID: created.UploadID, Parts: parts})
	if err != nil {
		_ = env.Store.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: env.Bucket, Key: key, UploadID: created.UploadID})
	}
	return err
}

// layout expands a known-size plan into its part sizes.
func layout(p multipart.Plan) []int64 {
	sizes := make([]int64, p.Parts)
	for i := range sizes {
		sizes[i] = p.PartSize
	}
	sizes[len(sizes)-1] = p.LastPartSize
	return sizes
}

// serverProfile is the profile named after the test server (versitygw, minio), or strict for a
// server the tests do not know.
func serverProfile(t *testing.T, env testkit.Env) multipart.Rules {
	t.Helper()
	rules, err := multipart.Profile(env.Server)
	if err != nil {
		rules, err = multipart.Profile(multipart.DefaultProfile)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// Plans executed through both adapters against each real server read back identical: a 1-byte
// last part, an R2 plan's equal parts, and an unknown-length stream cut by its plan. A
// deliberately illegal layout (a 4 MiB non-final part) is refused by the server and classifies as
// Compatibility.
func TestPlansAgainstServer(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, tc := range []struct {
			name    string
			profile string
			size    int64
		}{
			{"one-byte-last-part", serverProfile(t, env).Name, 2*bytesize.MiB*5 + 1},
			{"r2-equal-parts", "r2", 3*5*bytesize.MiB + 12345},
		} {
			rules, err := multipart.Profile(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := rules.Plan(multipart.PlanRequest{Size: tc.size, PartSize: 5 * bytesize.MiB, Concurrency: 2})
			if err != nil {
				t.Fatal(err)
			}
			sizes := layout(plan)
			if err := multipart.ValidateLayout(rules, sizes); err != nil {
				t.Fatalf("%s: the plan breaks its own rules: %v", tc.name, err)
			}
			if tc.name == "one-byte-last-part" && sizes[len(sizes)-1] != 1 {
				t.Fatalf("last part %d bytes", sizes[len(sizes)-1])
			}
			data := s3test.RandomBytes(int(tc.size))
			if err := execute(t, env, tc.name, data, sizes); err != nil {
				t.Fatalf("%s: server refused a planned layout %v: %v", tc.name, sizes, err)
			}
			if got := s3test.ReadAll(t, env.Srv, env.Bucket, tc.name); !bytes.Equal(got, data) {
				t.Fatalf("%s: read back differs", tc.name)
			}
		}

		// Unknown length: the plan fixes the part size from the expected maximum; the stream is
		// cut into parts checked one by one with CheckPart.
		rules := serverProfile(t, env)
		plan, err := rules.Plan(multipart.PlanRequest{Size: multipart.UnknownSize, PartSize: 5 * bytesize.MiB, Concurrency: 2, ExpectedMaxSize: 100 * bytesize.MiB})
		if err != nil {
			t.Fatal(err)
		}
		data := s3test.RandomBytes(int(2*plan.PartSize + 777))
		var sizes []int64
		for off := int64(0); off < int64(len(data)); off += plan.PartSize {
			n := min(plan.PartSize, int64(len(data))-off)
			if err := plan.CheckPart(len(sizes)+1, n, off+n == int64(len(data))); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
		if err := execute(t, env, "unknown-length", data, sizes); err != nil {
			t.Fatal(err)
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, "unknown-length"); !bytes.Equal(got, data) {
			t.Fatal("unknown-length: read back differs")
		}

		// Illegal: a 4 MiB non-final part. The rules say so before sending...
		illegal := []int64{4 * bytesize.MiB, 1}
		if err := multipart.ValidateLayout(rules, illegal); err == nil {
			t.Fatal("ValidateLayout accepted a 4 MiB non-final part")
		}
		// ...and the server refuses it at Complete, which classifies as Compatibility.
		err = execute(t, env, "illegal", s3test.RandomBytes(4<<20+1), illegal)
		e := sperrors.Classify(&sperrors.Error{Op: "CompleteMultipartUpload", Err: err})
		if err == nil || e.Kind != sperrors.Compatibility || e.Code != "EntityTooSmall" {
			t.Fatalf("illegal layout: want Compatibility EntityTooSmall, got %v (%v)", e, err)
		}
		var re *store.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 400 {
			t.Fatalf("raw facts: %v", err)
		}
	})
}
