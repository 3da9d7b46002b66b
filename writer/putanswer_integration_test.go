package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/storetest/wirekit"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// flushObjects and flushSize are the flush the tests below make: many small objects through one
// fresh Uploader, as a service writing out its buffers does.
const (
	flushObjects = 8
	flushSize    = 64 << 10
)

// putEvidence collects, per server, what verified a fresh Uploader's single PUTs in
// TestSinglePutAnswerOnRealServers, for the table of docs/verification.md (checkPutEvidence).
var putEvidence = struct {
	sync.Mutex
	rows map[string]map[string]string // server → case → "etag-md5 from PutObject; 1 request"
}{rows: map[string]map[string]string{}}

func recordPutEvidence(server, adapter, kase string, res *writer.Result, requests []string) {
	putEvidence.Lock()
	defer putEvidence.Unlock()
	row := putEvidence.rows[server]
	if row == nil {
		row = map[string]string{}
		putEvidence.rows[server] = row
	}
	cell := fmt.Sprintf("`%s` from %s (%s)", res.Verified, res.VerifiedBy, strings.Join(requests, ", "))
	if old, ok := row[kase]; ok && old != cell {
		cell = old + "; " + adapter + ": " + cell // the adapters differ: say so
	}
	row[kase] = cell
}

// TestSinglePutAnswerOnRealServers: a flush of small objects through a fresh Uploader, on every
// server and adapter, counted at the wire (the fault proxy sees every request): at defaults and
// with the server's own profile the first object costs one PutObject and no HEAD, its answer's
// ETag being the MD5 of the bytes sent (Ceph RGW, with its profile, is sent Content-MD5, which it
// checks); with SaveRereads off each gets its HEAD; where the ETag is not an MD5 (the proxy makes
// it opaque, as AWS does under SSE-KMS) the first write's HEAD stays. On a server that checks
// the checksum header (MinIO, the gateway) the second write, proven as the first, sends the
// checksum probe, in an upload of its own, aborted (the first sends none: it may be the
// Uploader's only one), and every later write (SaveRereads on) is one PutObject proven by the
// checksum its answer echoes, with no MD5. Every object reads back equal. It
// keeps the table of docs/verification.md (each server's first write; checkPutEvidence).
func TestSinglePutAnswerOnRealServers(t *testing.T) {
	t.Cleanup(func() { checkPutEvidence(t) })
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 5)
		checks := !env.Srv.IgnoresChecksums() // the HEAD reports the checksum sent
		headMethod := verify.MethodCRC32C
		if !checks {
			headMethod = verify.MethodETagMD5
		}
		for _, c := range []struct {
			name     string
			opts     func(*writer.Options)
			opaque   bool
			requests []string // each write's, in order
			method   verify.Method
			by       string
		}{
			{"defaults", nil, false, []string{"PutObject"}, verify.MethodETagMD5, "PutObject"},
			{"the server's profile", func(o *writer.Options) { o.Profile = env.Profile() }, false, []string{"PutObject"}, verify.MethodETagMD5, "PutObject"},
			{"SaveRereads off", func(o *writer.Options) { o.Savings &^= writer.SaveRereads }, false, []string{"PutObject", "HeadObject"}, headMethod, "HeadObject"},
			{"ETags not MD5s", nil, true, []string{"PutObject", "HeadObject"}, verify.MethodCRC32C, "HeadObject"},
		} {
			t.Run(c.name, func(t *testing.T) {
				// Without a profile no Content-MD5 goes, which a store could answer back as its
				// ETag: a PutObject carrying one is refused here, and the write would fail.
				var rules []faultproxy.Rule
				if c.opts == nil {
					rules = append(rules, faultproxy.Rule{Op: faultproxy.PutObject, Header: "Content-MD5",
						Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 400, Code: "TestContentMD5Sent"}})
				}
				if c.opaque {
					rules = append(rules, faultproxy.Rule{Op: faultproxy.OpAny, Fault: faultproxy.Fault{Kind: faultproxy.OpaqueETag}})
				}
				proxy.SetRules(rules...)
				defer proxy.SetRules()
				want := slices.Clone(c.requests)
				method, by := c.method, c.by
				if c.opaque && !checks {
					// Nothing but the bytes can prove it: read back, within the default limit.
					want, method, by = append(want, "GetObject"), verify.MethodReadBack, "GetObject"
				}
				// Where the server checks the checksum header, the second write sends the checksum
				// probe (its own upload: create, part, abort) unless the HEAD is asked for after
				// every write; the probe shows the server checks, so every write after it is
				// proven by the checksum its answer echoes, with no HEAD and no MD5.
				probed := checks && c.name != "SaveRereads off"
				laterWant, laterMethod, laterBy := want, method, by
				probeRequests := 0
				if probed {
					laterWant, laterMethod, laterBy = []string{"PutObject"}, verify.MethodCRC32C, "PutObject"
					probeRequests = 3
				}
				var opts []func(*writer.Options)
				if c.opts != nil {
					opts = append(opts, c.opts)
				}
				u, err := writer.NewUploader(st, opts...)
				if err != nil {
					t.Fatal(err)
				}
				before := proxy.Stats().Requests
				for i := range flushObjects {
					data := s3test.RandomBytes(flushSize)
					key := fmt.Sprintf("flush/%s/%d", strings.ReplaceAll(c.name, " ", "-"), i)
					w, err := u.New(context.Background(), env.Bucket, key)
					if err != nil {
						t.Fatal(err)
					}
					res, err := closeWith(w, data)
					if err != nil {
						t.Fatalf("%s: %v", key, err)
					}
					if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
						t.Fatalf("%s: read back %d bytes, not the %d written", key, len(got), len(data))
					}
					want, method, by := want, method, by
					if i > 1 {
						want, method, by = laterWant, laterMethod, laterBy
					}
					if res.Multipart || !res.VerifiedStrong || res.Verified != method || res.VerifiedBy != by {
						t.Fatalf("%s: verified %q by %q (strong %v, multipart %v), want %q by %q", key, res.Verified, res.VerifiedBy, res.VerifiedStrong, res.Multipart, method, by)
					}
					if res.Requests != len(want) {
						t.Fatalf("%s: Result.Requests %d, want %d (%v)", key, res.Requests, len(want), want)
					}
					if probed && i > 1 && writer.MD5Bytes(w) != 0 {
						t.Fatalf("%s: hashed %d bytes by MD5, though the probe showed the server checks the checksum", key, writer.MD5Bytes(w))
					}
					if c.opaque && checks && i > 0 && writer.MD5Bytes(w) != 0 {
						t.Fatalf("%s: hashed %d bytes by MD5, though the first write showed the ETags are not MD5s", key, writer.MD5Bytes(w))
					}
					if i == 0 {
						recordPutEvidence(env.Server, env.Adapter, c.name, res, want)
					}
				}
				after := proxy.Stats().Requests
				for _, op := range []faultproxy.Op{faultproxy.PutObject, faultproxy.HeadObject, faultproxy.GetObject} {
					got := after[op] - before[op]
					if n := 2*count(want, string(op)) + (flushObjects-2)*count(laterWant, string(op)); got != n {
						t.Errorf("%s: %d at the wire for %d writes, want %d", op, got, flushObjects, n)
					}
				}
				if got, n := total(after)-total(before), 2*len(want)+(flushObjects-2)*len(laterWant)+probeRequests; got != n {
					t.Errorf("%d requests at the wire for %d writes, want %d (%d of them the probe's)", got, flushObjects, n, probeRequests)
				}
				if probed && after[faultproxy.AbortMultipartUpload]-before[faultproxy.AbortMultipartUpload] != 1 {
					t.Errorf("the probe's upload was not aborted once: %d aborts", after[faultproxy.AbortMultipartUpload]-before[faultproxy.AbortMultipartUpload])
				}
			})
		}
	})
}

func count(ops []string, op string) int {
	n := 0
	for _, o := range ops {
		if o == op {
			n++
		}
	}
	return n
}

// The table of docs/verification.md that TestSinglePutAnswerOnRealServers keeps: one row per
// server, each compared with what this run measured on that server (SAFEPUT_UPDATE_DOCS=1
// rewrites the rows instead). A server not in the run keeps its row; the s3rver row is
// TestS3rverSmoke's, in cmd/safeput.
const (
	evidenceDoc   = "../docs/verification.md"
	evidenceBegin = "<!-- single PUT evidence table: the server rows kept by TestSinglePutAnswerOnRealServers in writer/, the s3rver row by TestS3rverSmoke in cmd/safeput/ -->"
	evidenceEnd   = "<!-- end of single PUT evidence table -->"
)

var evidenceCases = []string{"defaults", "the server's profile", "SaveRereads off", "ETags not MD5s"}

// checkPutEvidence compares each measured server's row of docs/verification.md's table with
// what this run measured.
func checkPutEvidence(t *testing.T) {
	putEvidence.Lock()
	defer putEvidence.Unlock()
	if len(putEvidence.rows) == 0 || t.Failed() {
		return
	}
	raw, err := os.ReadFile(evidenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start, end := strings.Index(text, evidenceBegin), strings.Index(text, evidenceEnd)
	if start < 0 || end < start {
		t.Fatalf("%s lacks the markers %q and %q", evidenceDoc, evidenceBegin, evidenceEnd)
	}
	start += len(evidenceBegin) + 1
	lines := strings.Split(strings.TrimSuffix(text[start:end], "\n"), "\n")
	changed := false
	for server, row := range putEvidence.rows {
		cells := make([]string, len(evidenceCases))
		for i, c := range evidenceCases {
			if cells[i] = row[c]; cells[i] == "" {
				t.Logf("%s: case %q did not run, so its row is not checked", server, c)
				cells = nil
				break
			}
		}
		if cells == nil {
			continue
		}
		want := fmt.Sprintf("| %s | %s |", server, strings.Join(cells, " | "))
		at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| "+server+" |") })
		switch {
		case at >= 0 && lines[at] == want:
			continue
		case os.Getenv("SAFEPUT_UPDATE_DOCS") == "":
			t.Errorf("%s: the single PUT evidence row of %s differs from what this run measured; SAFEPUT_UPDATE_DOCS=1 rewrites it:\n%s", server, evidenceDoc, want)
		case at >= 0:
			lines[at], changed = want, true
		default:
			lines, changed = append(lines, want), true
		}
	}
	if changed {
		if err := os.WriteFile(evidenceDoc, []byte(text[:start]+strings.Join(lines, "\n")+"\n"+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSinglePutDamagedOnTheWire: a PUT body cut or damaged on the way (the proxy stores half of
// it, or flips a byte, with its checksum headers dropped, and the store answers 200 with the ETag
// of what it kept), with SaveRereads on and off, on every server and adapter. Never a success on
// a damaged object, and none left at the key: a fresh Uploader's stream fails Integrity (its
// answer's ETag proved nothing, so the HEAD and its judgement decided, and the object was
// deleted), its io.ReaderAt source is sent again and lands. With the saving on, an Uploader
// whose earlier PUT's answer carried its MD5 catches the damage at the receipt, without a HEAD,
// and sends the held bytes again, so even a stream lands; with it off, the HEAD catches it.
func TestSinglePutDamagedOnTheWire(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 7)
		for _, kind := range []faultproxy.Kind{faultproxy.StoreTruncated, faultproxy.StoreFlipped} {
			for _, saving := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/saving-%v", kind, saving), func(t *testing.T) {
					opts := func(o *writer.Options) {
						o.Retry = noHangPolicy()
						if !saving {
							o.Savings &^= writer.SaveRereads
						}
					}
					prefix := fmt.Sprintf("damaged/%s-%v/", kind, saving)
					damageNext := func() {
						proxy.SetRules(faultproxy.Rule{Op: faultproxy.PutObject, Nth: 1, Fault: faultproxy.Fault{Kind: kind}})
					}
					defer proxy.SetRules()
					newUploader := func() *writer.Uploader {
						u, err := writer.NewUploader(st, opts)
						if err != nil {
							t.Fatal(err)
						}
						return u
					}
					data := s3test.RandomBytes(flushSize)

					// A fresh Uploader, a stream: the held bytes went once and the answer proved nothing.
					damageNext()
					key := prefix + "fresh-stream"
					w, err := newUploader().New(context.Background(), env.Bucket, key)
					if err != nil {
						t.Fatal(err)
					}
					res, err := closeWith(w, data)
					if proxy.Stats().Injected[kind] == 0 {
						t.Fatal("the damage was never injected")
					}
					var se *sperrors.Error
					if !errors.As(err, &se) || se.Kind != sperrors.Integrity || se.ObjectLeft {
						t.Fatalf("%s: result %+v, err %v: want Integrity, the damaged object removed", key, res, err)
					}
					if s3test.Exists(t, env.Srv, env.Bucket, key) {
						t.Fatalf("%s: the damaged object is still at the key", key)
					}

					// A fresh Uploader, an io.ReaderAt: the whole upload is sent again.
					damageNext()
					key = prefix + "fresh-file"
					res, err = newUploader().Upload(context.Background(), env.Bucket, key, bytes.NewReader(data))
					checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
					if res.UploadAttempts < 2 && res.Failures[sperrors.Integrity] == 0 {
						t.Fatalf("%s: landed in %d attempts, failures %v: the damaged attempt went unseen", key, res.UploadAttempts, res.Failures)
					}

					// An Uploader that learned its store's PUT answers carry the body's MD5.
					proxy.SetRules()
					u := newUploader()
					w, err = u.New(context.Background(), env.Bucket, prefix+"clean")
					if err != nil {
						t.Fatal(err)
					}
					if _, err := closeWith(w, s3test.RandomBytes(flushSize)); err != nil {
						t.Fatal(err)
					}
					damageNext()
					key = prefix + "learned-stream"
					heads := proxy.Stats().Requests[faultproxy.HeadObject]
					w, err = u.New(context.Background(), env.Bucket, key)
					if err != nil {
						t.Fatal(err)
					}
					res, err = closeWith(w, data)
					if !saving && env.Srv.IgnoresChecksums() {
						// A store that checks no checksum teaches the Uploader nothing that lets it
						// skip the MD5, so the answer's ETag shows the damage at the receipt and the
						// held bytes go again, as with the saving on; the HEAD then proves the object.
						checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
						if res.Failures[sperrors.Integrity] == 0 {
							t.Fatalf("%s: failures %v: the damaged answer was not caught at the receipt", key, res.Failures)
						}
						return
					}
					if !saving {
						// The HEAD decides, as before this write learned anything: no MD5 was
						// taken for the answer, so only the HEAD saw the damage, after the bytes
						// of the stream were let go.
						if !errors.As(err, &se) || se.Kind != sperrors.Integrity || se.ObjectLeft || s3test.Exists(t, env.Srv, env.Bucket, key) {
							t.Fatalf("%s: result %+v, err %v: want Integrity, the damaged object removed", key, res, err)
						}
						return
					}
					checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
					if res.Failures[sperrors.Integrity] == 0 {
						t.Fatalf("%s: failures %v: the damaged answer was not caught at the receipt", key, res.Failures)
					}
					if n := proxy.Stats().Requests[faultproxy.HeadObject] - heads; n != 0 {
						t.Fatalf("%s: %d HEADs, want none", key, n)
					}
				})
			}
		}
	})
}

// TestWireSinglePutDamagedOnceKnownToCheck: on a server that checks the checksum header (MinIO,
// the gateway), through both adapters, an Uploader that writes only single PUTs learns from its
// second one's probe that the server checks, and then takes no MD5 for a PUT whose answer echoes
// the checksum sent. A body damaged on the way (the proxy stores half of it, or flips a byte,
// with its checksum headers dropped or recomputed over the altered bytes, and the server answers
// 200) gets an answer without that echo: the MD5 is taken then, the answer's ETag shows the
// damage at the receipt, and the bytes still held go again, a stream's too. Every write lands
// the bytes written, the re-sent one proven by its answer's echo; nothing is left at the key
// wrong. (With SaveRereads off no probe goes and the HEAD decides: TestSinglePutDamagedOnTheWire.)
func TestWireSinglePutDamagedOnceKnownToCheck(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		if env.Srv.IgnoresChecksums() {
			t.Skip("the server checks no checksum header: it is never known to check (TestSinglePutDamagedOnTheWire covers it)")
		}
		proxy, st := wirekit.Proxied(t, env, 9)
		defer proxy.SetRules()
		for _, kind := range []faultproxy.Kind{faultproxy.StoreTruncated, faultproxy.StoreFlipped} {
			for _, rechecksum := range []bool{false, true} {
				for _, src := range []source{replayable, stream} {
					name := fmt.Sprintf("%s/rechecksum-%v/%s", kind, rechecksum, src)
					t.Run(name, func(t *testing.T) {
						proxy.SetRules()
						u, err := writer.NewUploader(st, func(o *writer.Options) { o.Retry = noHangPolicy() })
						if err != nil {
							t.Fatal(err)
						}
						prefix := "known-to-check/" + strings.ReplaceAll(name, "/", "-") + "/"
						write := func(key string, data []byte) (*writer.Result, int64, error) {
							if src == replayable {
								res, err := u.Upload(context.Background(), env.Bucket, key, bytes.NewReader(data))
								return res, -1, err
							}
							w, err := u.New(context.Background(), env.Bucket, key)
							if err != nil {
								t.Fatal(err)
							}
							res, err := closeWith(w, data)
							return res, writer.MD5Bytes(w), err
						}
						// The second write sends the probe; the third is proven by its echo.
						for i, key := range []string{"first", "probed", "learned"} {
							data := s3test.RandomBytes(flushSize)
							res, hashed, err := write(prefix+key, data)
							checkOutcome(t, env, prefix+key, data, res, err, sperrors.Unknown)
							want := verify.MethodETagMD5
							if i == 2 {
								want = verify.MethodCRC32C
							}
							if res.Verified != want || res.VerifiedBy != "PutObject" || (i == 2 && hashed > 0) {
								t.Fatalf("%s: verified %s by %s, %d bytes hashed: want %s from PutObject (and no MD5 once the probe answered)", key, res.Verified, res.VerifiedBy, hashed, want)
							}
						}
						proxy.SetRules(faultproxy.Rule{Op: faultproxy.PutObject, Nth: 1, Fault: faultproxy.Fault{Kind: kind, Rechecksum: rechecksum}})
						injected := proxy.Stats().Injected[kind]
						data := s3test.RandomBytes(flushSize)
						key := prefix + "damaged"
						res, _, err := write(key, data)
						if proxy.Stats().Injected[kind] == injected {
							t.Fatal("the damage was never injected")
						}
						checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
						if res.Failures[sperrors.Integrity] != 1 || res.Verified != verify.MethodCRC32C || res.VerifiedBy != "PutObject" {
							t.Fatalf("%s: failures %v, verified %s by %s: want the damage caught at the receipt, the re-sent PUT proven by its echo",
								key, res.Failures, res.Verified, res.VerifiedBy)
						}
					})
				}
			}
		}
	})
}
