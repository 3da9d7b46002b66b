package main

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
)

// listingQuirks plays a store's ListMultipartUploads: one that ignores the prefix (lists the
// whole bucket), or one that reports no start time for any upload.
type listingQuirks struct {
	store.Store
	ignorePrefix, noInitiated bool
}

func (s listingQuirks) ListMultipartUploads(ctx context.Context, in *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	c := *in
	if s.ignorePrefix {
		c.Prefix = ""
	}
	out, err := s.Store.ListMultipartUploads(ctx, &c)
	if err == nil && s.noInitiated {
		for i := range out.Uploads {
			out.Uploads[i].Initiated = time.Time{}
		}
	}
	return out, err
}

func openUploads(t *testing.T, mem *memstore.Store, bucket string, keys ...string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, k := range keys {
		out, err := mem.CreateMultipartUpload(context.Background(), &store.CreateMultipartUploadInput{Bucket: bucket, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		ids[k] = out.UploadID
	}
	return ids
}

func uploadKeys(mem *memstore.Store, bucket string) string {
	var keys []string
	for _, u := range mem.Uploads(bucket) {
		keys = append(keys, u.Key)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

func testApp() (*app, *bytes.Buffer) {
	var out bytes.Buffer
	return newApp(nil, &out, &out), &out
}

// sweep --run on a store that ignores the prefix aborts only the uploads under it: another
// team's, an unrelated key and a key that only shares the prefix's letters stay.
func TestSweepStaysInPrefixWhenTheStoreIgnoresIt(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("bkt"))
	openUploads(t, mem, "bkt", "sweepme/a.bin", "sweepme/sub/b.bin", "keep/other-team/a.bin", "zzz-unrelated.bin", "sweepme-sibling.bin")
	a, out := testApp()
	a.g.json = true
	err := a.sweep(context.Background(), listingQuirks{Store: mem, ignorePrefix: true}, s3URL{Bucket: "bkt", Key: "sweepme/"}, sweepOpts{run: true})
	if err != nil {
		t.Fatal(err)
	}
	var rep sweepReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Found != 2 || rep.Aborted != 2 {
		t.Errorf("report %+v; want the two uploads under sweepme/ found and aborted", rep)
	}
	for _, u := range rep.Uploads {
		if !strings.HasPrefix(u.Key, "sweepme/") {
			t.Errorf("the report lists %q, outside the prefix", u.Key)
		}
	}
	if got := uploadKeys(mem, "bkt"); got != "keep/other-team/a.bin sweepme-sibling.bin zzz-unrelated.bin" {
		t.Errorf("incomplete uploads after the sweep: %q", got)
	}
}

// sweep --older-than does not abort an upload whose start time the store does not report: its
// age is unknown, so it is listed as age-unknown and left; without --older-than it is swept.
func TestSweepOlderThanLeavesUploadsOfUnknownAge(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("bkt"))
	openUploads(t, mem, "bkt", "in/a", "in/b")
	st := listingQuirks{Store: mem, noInitiated: true}
	a, out := testApp()
	a.g.json = true
	if err := a.sweep(context.Background(), st, s3URL{Bucket: "bkt", Key: "in/"}, sweepOpts{run: true, olderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var rep sweepReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Found != 0 || rep.Aborted != 0 || rep.AgeUnknown != 2 || len(rep.Uploads) != 2 || rep.Uploads[0].State != "age-unknown" {
		t.Errorf("report %+v; want both listed age-unknown, none aborted", rep)
	}
	if got := uploadKeys(mem, "bkt"); got != "in/a in/b" {
		t.Errorf("incomplete uploads after --older-than: %q, want both kept", got)
	}
	a, out = testApp()
	if err := a.sweep(context.Background(), st, s3URL{Bucket: "bkt", Key: "in/"}, sweepOpts{olderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "age unknown 2") || strings.Contains(out.String(), "no incomplete multipart uploads") {
		t.Errorf("the table does not say the ages are unknown:\n%s", out)
	}
	a, _ = testApp()
	if err := a.sweep(context.Background(), st, s3URL{Bucket: "bkt", Key: "in/"}, sweepOpts{run: true}); err != nil {
		t.Fatal(err)
	}
	if got := uploadKeys(mem, "bkt"); got != "" {
		t.Errorf("incomplete uploads after a sweep without --older-than: %q", got)
	}
}

// A key holding a newline (or another control character) is printed quoted in sweep's and
// recover's tables, so it cannot forge a line of them.
func TestTablesEscapeKeys(t *testing.T) {
	const evil = "in/x\n  aborted              0            0  in/forged\x1b[2K"
	var b bytes.Buffer
	printSweep(&b, sweepReport{Bucket: "bkt", Prefix: "in/", Found: 1, Uploads: []sweptUpload{{Key: evil, UploadID: "u1", State: "found"}}})
	printRecover(&b, recoverJSON{Journal: "/j", Endpoint: "http://e", Bucket: "bkt", Prefix: "in/", DryRun: true,
		Uploads: []recoveredJSON{{Bucket: "bkt", Key: evil, UploadID: "u2\nforged", Outcome: "would-abort"}}})
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("a control character reached the table:\n%q", b.String())
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "forged") && !strings.Contains(line, `"in/x\n`) && !strings.Contains(line, `"u2\nforged"`) {
			t.Errorf("a key forged a line of its own: %q\nin:\n%s", line, b.String())
		}
	}
	for _, c := range []struct{ in, want string }{
		{"plain/key.bin", "plain/key.bin"},
		{"sp ace/ünïcode", "sp ace/ünïcode"},
		{"a\nb", `"a\nb"`},
		{"tab\there", `"tab\there"`},
		{"\u202eevil", `"\u202eevil"`},
		{`"quoted"`, `"\"quoted\""`},
		{"bad\xffutf8", `"bad\xffutf8"`},
	} {
		if got := printable(c.in); got != c.want {
			t.Errorf("printable(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// probe's clean-up aborts only the uploads it created (by id) and reports each: an upload under
// its scratch prefix that it did not create is reported and left alone, and on a store that
// ignores the prefix nothing outside the scratch prefix is touched.
func TestProbeCleanupAbortsOnlyItsOwnUploads(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("bkt"))
	const scratch = "scratch/safeput-probe-test/"
	others := openUploads(t, mem, "bkt", scratch+"not-ours", "scratch/other.bin", "keep/other-team/a.bin", "zzz-unrelated.bin")
	p := &prober{ctx: context.Background(), st: listingQuirks{Store: mem, ignorePrefix: true}, bucket: "bkt", prefix: scratch,
		objects: map[string]bool{}, uploads: map[string]string{}, made: map[string]string{}}
	p.rep.Leftovers, p.rep.Cleanup = []string{}, []probeUpload{}
	own := openUploads(t, mem, "bkt", scratch+"01-mine", scratch+"02-mine")
	for k, id := range own {
		p.created(id, k)
	}
	p.cleanup()
	if got := uploadKeys(mem, "bkt"); got != "keep/other-team/a.bin scratch/other.bin "+scratch+"not-ours zzz-unrelated.bin" {
		t.Errorf("incomplete uploads after the clean-up: %q; want only the probe's own aborted", got)
	}
	states := map[string]string{}
	for _, u := range p.rep.Cleanup {
		states[u.Key+"@"+u.UploadID] = u.State
	}
	want := map[string]string{
		scratch + "01-mine@" + own[scratch+"01-mine"]:      "aborted",
		scratch + "02-mine@" + own[scratch+"02-mine"]:      "aborted",
		scratch + "not-ours@" + others[scratch+"not-ours"]: "left-alone",
	}
	if len(states) != len(want) {
		t.Errorf("clean-up report %v, want %v", states, want)
	}
	for k, s := range want {
		if states[k] != s {
			t.Errorf("clean-up report: %s is %q, want %q", k, states[k], s)
		}
	}
	if p.rep.Removed.Uploads != 2 || len(p.rep.Leftovers) != 1 || !strings.Contains(p.rep.Leftovers[0], "not created by this run") {
		t.Errorf("removed %d uploads, leftovers %q; want 2 removed and the one left alone named", p.rep.Removed.Uploads, p.rep.Leftovers)
	}
	var b bytes.Buffer
	printProbe(&b, p.rep)
	if !strings.Contains(b.String(), "left-alone") || !strings.Contains(b.String(), "only the ones this run created are aborted") {
		t.Errorf("probe's output does not say what its clean-up did:\n%s", b.String())
	}
}
