package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// TestPutDefaultsStrong: with no --provider, put of a single-PUT file and a multipart file ends
// strongly verified through both adapters; --allow-length-only does not weaken a write the
// store's evidence proves.
func TestPutDefaultsStrong(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		bucket := s3test.NewBucket(t, s)
		for _, size := range []int{3 << 20, 23 << 20} {
			data := s3test.RandomBytes(size)
			file := writeFile(t, data)
			for _, backend := range []string{"aws", "minio"} {
				for _, extra := range [][]string{nil, {"--allow-length-only"}} {
					key := fmt.Sprintf("%s-%d-%d", backend, size, len(extra))
					args := append([]string{"--backend", backend, "--json", "put"}, extra...)
					r := cli(t, s, nil, append(args, file, "s3://"+bucket+"/"+key)...)
					expectCode(t, r, 0, "put "+strings.Join(args, " "))
					var res jsonResult
					if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
						t.Fatalf("--json output is not JSON: %v\n%q", err, r.stdout)
					}
					if !res.VerifiedStrong || res.AllowLengthOnly || len(res.Unproven) != 0 {
						t.Errorf("%s %d bytes %v: %+v, want strongly verified", backend, size, extra, res)
					}
					if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
						t.Fatalf("stored object differs (%d vs %d bytes)", len(got), len(data))
					}
				}
			}
		}
	})
}

// TestWeakResultReported: a length-only acceptance is visible in the JSON and the text output.
func TestWeakResultReported(t *testing.T) {
	r := &writer.Result{Bucket: "b", Key: "k", Size: 1, Verified: verify.MethodLengthOnly,
		Unproven: []string{"HEAD reported no full-object CRC64NVME checksum"}, Notes: []string{"the store's CompleteMultipartUpload answer carried no ETag; the HEAD decided"}}
	j := jsonResultOf(r)
	if !j.AllowLengthOnly || j.VerifiedStrong || j.Verified != "length-only" || len(j.Unproven) != 1 || len(j.Notes) != 1 {
		t.Fatalf("json %+v", j)
	}
	var out bytes.Buffer
	printResult(&out, r)
	for _, want := range []string{"WEAK", "unproven   HEAD reported no full-object", "note       the store's CompleteMultipartUpload"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
}
