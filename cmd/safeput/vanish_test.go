package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/safeput/safeput/storetest/s3test"
)

// TestPutRidesOutVanishedUpload: while `put FILE` sends its parts, a second client aborts its
// multipart upload (as an operator's sweep would). The file is read again into one new upload:
// exit 0, the object reads back equal, --json says so (upload_attempts 2 and a note), and no
// incomplete upload is left; through both backends.
func TestPutRidesOutVanishedUpload(t *testing.T) { s3test.ForEach(t, testPutRidesOutVanishedUpload) }

func testPutRidesOutVanishedUpload(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	data := s3test.RandomBytes(11<<20 + 5)
	file := writeFile(t, data)
	for _, backend := range []string{"aws", "minio"} {
		t.Run(backend, func(t *testing.T) {
			key := backend + "/vanish.bin"
			// Each part waits before it is sent: the abort lands while the write is under way.
			cmd := exec.Command(bin, "--path-style", "--backend", backend, "--provider", provider(s), "--part-size", "5MiB",
				"--pause", "UploadPart:500ms", "--json", "put", file, "s3://"+bucket+"/"+key)
			cmd.Env = serverEnv(s)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan struct{})
			go func() { _ = cmd.Wait(); close(ended) }()
			aborted := abortFirstUpload(t, s, bucket, key, ended)
			select {
			case <-ended:
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatal("put did not end")
			}
			if aborted == "" {
				t.Fatalf("the put ended before its upload could be aborted; stderr:\n%s", errb.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("exit %d, want 0 after the aborted upload %s\nstdout:\n%s\nstderr:\n%s", code, aborted, out.String(), errb.String())
			}
			var res struct {
				Status         string   `json:"status"`
				UploadID       string   `json:"upload_id"`
				UploadAttempts int      `json:"upload_attempts"`
				Notes          []string `json:"notes"`
			}
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("--json output: %v\n%s", err, out.String())
			}
			noted := false
			for _, n := range res.Notes {
				noted = noted || (strings.Contains(n, aborted) && strings.Contains(n, "aborted elsewhere"))
			}
			if res.Status != "landed" || res.UploadAttempts != 2 || res.UploadID == aborted || !noted {
				t.Fatalf("json result %+v: want landed in a second upload, the note naming the aborted one %s", res, aborted)
			}
			if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, not the %d of the file", len(got), len(data))
			}
			if ups := s3test.IncompleteUploads(t, s, bucket, key); len(ups) != 0 {
				t.Fatalf("incomplete uploads left: %v", ups)
			}
		})
	}
}

// abortFirstUpload waits for an incomplete upload of key and aborts it through the test's own
// client, once; it returns its id, or "" when the put ended first.
func abortFirstUpload(t *testing.T, s s3test.Server, bucket, key string, ended <-chan struct{}) string {
	t.Helper()
	c := s.RawClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		select {
		case <-ended:
			return ""
		default:
		}
		out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatalf("list uploads: %v", err)
		}
		for _, u := range out.Uploads {
			if aws.ToString(u.Key) != key {
				continue
			}
			if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: u.UploadId}); err != nil {
				t.Fatalf("abort from the side: %v", err)
			}
			return aws.ToString(u.UploadId)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no upload of the key appeared")
	return ""
}
