package cabi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

// headerExamples reads the JSON examples out of safeput.h: each starts on a comment line whose
// text begins with {"status" and runs, over the following comment lines, until its braces
// close.
func headerExamples(t *testing.T) []map[string]any {
	t.Helper()
	src, err := os.ReadFile("safeput.h")
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	var cur strings.Builder
	for line := range strings.SplitSeq(string(src), "\n") {
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*"))
		if cur.Len() == 0 && !strings.HasPrefix(text, `{"status"`) {
			continue
		}
		cur.WriteString(text)
		s := cur.String()
		if strings.Count(s, "{")+strings.Count(s, "[") > strings.Count(s, "}")+strings.Count(s, "]") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("safeput.h example is not JSON: %s: %v", s, err)
		}
		out = append(out, m)
		cur.Reset()
	}
	return out
}

// conditional are the fields that appear only when what they report happened (the header says
// when): an example may show one a plain run does not return, and a run may return one the
// examples leave to the header's prose.
var conditional = []string{
	"version_id", "left_behind", "maybe_left_behind", "commit_answer_lost", "notes", "allow_length_only", "unproven",
	"code", "http_status", "upload_id", "abort_failed", "object_left", "note", "warnings",
}

// The header's JSON examples are what the calls return: every field a real call returns is in
// the example for its status with the same JSON type, and every field of the example is one a
// real call returned or one that appears only when something happened. A single PUT, a
// multipart upload, a failure (create_only on an existing key) and an abort, through both
// adapters on every server.
func TestHeaderExamples(t *testing.T) {
	examples := headerExamples(t)
	src, err := os.ReadFile("safeput.h")
	if err != nil {
		t.Fatal(err)
	}
	header := string(src)
	example := func(status string, multipart bool) map[string]any {
		for _, e := range examples {
			if e["status"] == status && (status != "landed" || e["multipart"] == multipart) {
				return e
			}
		}
		t.Fatalf("safeput.h has no example with status %q (multipart %v)", status, multipart)
		return nil
	}
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) {
		bucket := s3test.NewBucket(t, srv)
		for _, backend := range []string{"aws", "minio"} {
			t.Run(backend, func(t *testing.T) {
				conf := func(key string, extra string) string {
					return fmt.Sprintf(`{"bucket":%q,"key":%q,"endpoint":%q,"access_key":%q,"secret_key":%q,"region":%q,"path_style":true,"backend":%q,"provider":"versitygw","part_size":"5MiB"%s}`,
						bucket, key, srv.Endpoint, srv.AccessKey, srv.SecretKey, srv.Region, backend, extra)
				}
				put := func(key, extra string, n int) outcome {
					h, o := Open(conf(key, extra))
					if o.status != StatusOK {
						t.Fatalf("open: %+v", o)
					}
					if w := Write(h, bytes.Repeat([]byte("v"), n)); w.status != StatusOK {
						Abort(h)
						return w
					}
					return Close(h)
				}
				got := map[string][]string{} // example → the real JSON checked against it
				check := func(name string, o outcome, ex map[string]any) {
					var m map[string]any
					if err := json.Unmarshal([]byte(o.json), &m); err != nil {
						t.Fatalf("%s: %q: %v", name, o.json, err)
					}
					for k, v := range m {
						ev, ok := ex[k]
						if !ok {
							// A field that appears only when something happened may be named in the
							// header's prose instead.
							if !slices.Contains(conditional, k) || !strings.Contains(header, `"`+k+`"`) {
								t.Errorf("%s: field %q (%v) is neither in safeput.h's example %v nor named there", name, k, v, ex)
							}
						} else if fmt.Sprintf("%T", ev) != fmt.Sprintf("%T", v) {
							t.Errorf("%s: field %q is %T, safeput.h's example shows %T", name, k, v, ev)
						}
					}
					for k := range ex {
						if _, ok := m[k]; !ok && !slices.Contains(conditional, k) {
							t.Errorf("%s: safeput.h's example has %q, the call returned none: %s", name, k, o.json)
						}
					}
					got[name] = append(got[name], o.json)
				}
				o := put("single", "", 3)
				if o.status != StatusOK {
					t.Fatalf("single PUT: %+v", o)
				}
				check("single PUT", o, example("landed", false))
				o = put("multi", "", 11<<20)
				if o.status != StatusOK {
					t.Fatalf("multipart: %+v", o)
				}
				check("multipart", o, example("landed", true))
				o = put("single", `,"create_only":true`, 4) // other bytes than the object's
				if o.status != StatusPrecondition {
					t.Fatalf("create_only on an existing key: %+v; want 7", o)
				}
				check("failure", o, example("failed", false))
				o = put("declared", `,"size":100`, 5000)
				if o.status != StatusPermanent || !strings.Contains(o.json, "declared size 100") {
					t.Errorf("size 100 declared, 5000 written: %+v; want 4 naming the declared size", o)
				}
				check("failure", o, example("failed", false))
				check("bad input", func() outcome { _, o := Open(`{"bucket":"b","KEY":"k"}`); return o }(), example("failed", false))
				h, oo := Open(conf("aborted", ""))
				if oo.status != StatusOK {
					t.Fatalf("open: %+v", oo)
				}
				Write(h, []byte("x"))
				check("abort", Abort(h), example("aborted", false))
				for name, js := range got {
					t.Logf("%s: %s", name, js)
				}
			})
		}
	})
}
