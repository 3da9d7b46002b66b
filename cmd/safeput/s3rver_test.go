package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

// s3rverSmoke returns the s3rver the test command starts beside the real servers (scripts/
// s3server.sh: npm s3rver, pinned) and its bucket. Without one the test skips, except under
// CI=true, where a missing s3rver fails.
func s3rverSmoke(t *testing.T) (s3test.Server, string) {
	t.Helper()
	ep := os.Getenv("SAFEPUT_S3RVER_ENDPOINT")
	if ep == "" {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" {
			t.Fatal("CI=true needs s3rver: SAFEPUT_S3RVER_ENDPOINT is not set (scripts/s3server.sh starts it)")
		}
		t.Skip("no s3rver: SAFEPUT_S3RVER_ENDPOINT is not set (bash scripts/with-s3.sh starts one)")
	}
	return s3test.Server{Name: "s3rver", Endpoint: ep, AccessKey: os.Getenv("SAFEPUT_S3RVER_ACCESS_KEY"),
		SecretKey: os.Getenv("SAFEPUT_S3RVER_SECRET_KEY"), Region: os.Getenv("SAFEPUT_S3RVER_REGION")}, os.Getenv("SAFEPUT_S3RVER_BUCKET")
}

// The smoke set on s3rver, a store without ListParts (405), ListMultipartUploads (501) and abort
// (405): put at defaults of 3 MiB (one PUT) and 23 MiB (multipart) through both backends lands
// byte-identical and strongly verified, the single PUT by its answer's MD5 ETag alone, the
// multipart one saying it skipped the ListParts check;
// probe reports the three operations not supported and leaves nothing; a sweep dry run says the
// store cannot list uploads.
func TestS3rverSmoke(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s, bucket := s3rverSmoke(t)
	prefix := s3test.BucketName(t.Name()) + "/"
	var singleCell string // docs/verification.md's cell: what proved the 3 MiB PUT, from what
	for _, backend := range []string{"aws", "minio"} {
		for _, size := range []int{3 << 20, 23 << 20} {
			data := s3test.RandomBytes(size)
			key := fmt.Sprintf("%s%s/%d", prefix, backend, size)
			r := cli(t, s, nil, "--backend", backend, "--json", "put", "--no-progress", writeFile(t, data), "s3://"+bucket+"/"+key)
			expectCode(t, r, exitOK, "put "+key)
			var res struct {
				Multipart      bool     `json:"multipart"`
				Verified       string   `json:"verified"`
				VerifiedStrong bool     `json:"verified_strong"`
				VerifiedBy     string   `json:"verified_by"`
				Requests       int      `json:"requests"`
				Notes          []string `json:"notes"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("put --json: %v\n%s", err, r.stdout)
			}
			if !res.VerifiedStrong || res.Multipart != (size > 8<<20) {
				t.Errorf("%s: verified %s strong %v multipart %v", key, res.Verified, res.VerifiedStrong, res.Multipart)
			}
			// Its PutObject answer's ETag is the MD5 of the body: that answer proves the object.
			if !res.Multipart && (res.Verified != "etag-md5" || res.VerifiedBy != "PutObject" || res.Requests != 1) {
				t.Errorf("%s: verified %s from %s in %d requests, want etag-md5 from the PutObject answer alone", key, res.Verified, res.VerifiedBy, res.Requests)
			}
			if res.Multipart && !strings.Contains(strings.Join(res.Notes, "\n"),
				"the pre-Complete ListParts check did not run: the store does not support ListParts (HTTP 405 MethodNotAllowed)") {
				t.Errorf("%s: notes %q do not name the skipped ListParts check", key, res.Notes)
			}
			if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
				t.Fatalf("%s: SILENT CORRUPTION: read back %d bytes, wrote %d, not identical", key, len(got), len(data))
			}
			t.Logf("%s: verified %s from %s, %d requests", key, res.Verified, res.VerifiedBy, res.Requests)
			if !res.Multipart {
				sent := fmt.Sprintf("%d requests", res.Requests)
				if res.Requests == 1 {
					sent = res.VerifiedBy
				}
				singleCell = fmt.Sprintf("`%s` from %s (%s)", res.Verified, res.VerifiedBy, sent)
			}
		}
	}
	if singleCell != "" && !t.Failed() {
		checkS3rverEvidenceRow(t, singleCell)
	}

	r := cli(t, s, nil, "--json", "probe", "s3://"+bucket+"/"+prefix+"probe/")
	expectCode(t, r, exitOK, "probe")
	var rep probeReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("probe --json: %v\n%s", err, r.stdout)
	}
	results := map[string]string{}
	for _, row := range rep.Rows {
		results[row.Rule] = row.Result + " (" + row.Evidence + ")"
	}
	for rule, want := range map[string]string{
		ruleListParts:   "not supported (ListParts 405 MethodNotAllowed)",
		ruleListUploads: "not supported (ListMultipartUploads 501 NotImplemented)",
		ruleAbort:       "not supported (AbortMultipartUpload 405 MethodNotAllowed)",
	} {
		if results[rule] != want {
			t.Errorf("probe row %q = %q, want %q", rule, results[rule], want)
		}
	}
	if len(rep.Leftovers) != 0 || rep.Removed.Objects != rep.Created.Objects {
		t.Errorf("probe left things behind: created %+v removed %+v leftovers %v", rep.Created, rep.Removed, rep.Leftovers)
	}

	r = cli(t, s, nil, "sweep", "s3://"+bucket+"/"+prefix)
	expectCode(t, r, exitCompatibility, "sweep")
	if !strings.Contains(r.stderr, "the store cannot list incomplete multipart uploads (ListMultipartUploads answered HTTP 501 NotImplemented)") {
		t.Errorf("sweep said %q, want that the store cannot list uploads", r.stderr)
	}
}

// checkS3rverEvidenceRow compares the s3rver row of docs/verification.md's single PUT evidence
// table (kept with TestSinglePutAnswerOnRealServers in writer/) with what the CLI's put at
// defaults got; SAFEPUT_UPDATE_DOCS=1 rewrites the cell instead.
func checkS3rverEvidenceRow(t *testing.T, cell string) {
	t.Helper()
	const doc = "../../docs/verification.md"
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "| s3rver ") {
			continue
		}
		cells := strings.Split(l, " | ")
		if len(cells) < 2 {
			break
		}
		if cells[1] == cell {
			return
		}
		if os.Getenv("SAFEPUT_UPDATE_DOCS") == "" {
			t.Errorf("the s3rver row of %s says %s; this run got %s (SAFEPUT_UPDATE_DOCS=1 rewrites it)", doc, cells[1], cell)
			return
		}
		cells[1] = cell
		lines[i] = strings.Join(cells, " | ")
		if err := os.WriteFile(doc, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s has no s3rver row in its single PUT evidence table", doc)
}
