package writer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/storetest/wirekit"
	"github.com/safeput/safeput/writer"
)

// refuse answers status with code, as a store that lacks the operation does.
func refuse(op faultproxy.Op, header string, status int, code string) faultproxy.Rule {
	return faultproxy.Rule{Op: op, Header: header, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: status, Code: code}}
}

// s3rverLike are the answers of a store lacking every optional operation of the writer: s3rver's
// 405 to ListParts and 501 to ListMultipartUploads, and a HEAD refusing checksum mode.
var s3rverLike = []faultproxy.Rule{
	refuse(faultproxy.ListParts, "", 405, "MethodNotAllowed"),
	refuse(faultproxy.ListMultipartUploads, "", 501, "NotImplemented"),
	refuse(faultproxy.HeadObject, "x-amz-checksum-mode", 501, ""),
}

// On every real server through both adapters, with the proxy answering the optional operations
// "not supported": writes land byte-identical, strongly verified, and their Notes name each check
// that could not run; a failed write's abort is said to be not confirmable (and really happened);
// a lost create's leftover is said to be unlistable.
func TestWireLacksOptionalOperations(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 1)
		proxy.SetRules(s3rverLike...)
		// Not the wire tests' short stall window: a slow first Create on Ceph would be cut,
		// retried, and its upload left where this store cannot list it.
		up, err := writer.NewUploader(st, testOpts(env, func(o *writer.Options) { o.Retry = fastPolicy() })...)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i, c := range []struct {
			key   string
			size  int
			multi bool
		}{{"lacks/single", smallSize, false}, {"lacks/multi-1", 2*part + 1, true}, {"lacks/multi-2", 2*part + 1, true}} {
			data := s3test.RandomBytes(c.size)
			// The single PUT sends no checksum probe: a store known to check would spare the
			// multipart writes the very checks this test is about (the listing, the HEAD).
			noProbe := func(o *writer.Options) {
				if !c.multi {
					o.Savings &^= writer.SaveProbe
				}
			}
			res, err := up.Upload(ctx, env.Bucket, c.key, stream.reader(data), noProbe)
			checkOutcome(t, env, c.key, data, res, err, sperrors.Unknown)
			if c.multi != res.Multipart {
				t.Fatalf("%s: multipart %v", c.key, res.Multipart)
			}
			if c.multi && !hasNote(res.Notes, "pre-Complete ListParts check did not run", "HTTP 405 MethodNotAllowed") {
				t.Errorf("%s: notes %q do not name the skipped ListParts check", c.key, res.Notes)
			}
			if i > 0 && !hasNote(res.Notes, "reading the stored checksum after commit did not run", "HTTP 501") {
				t.Errorf("%s: notes %q do not name the skipped checksum read", c.key, res.Notes)
			}
			t.Logf("%s: verified %s, notes %q", c.key, res.Verified, res.Notes)
		}
		if n := proxy.Stats().Requests[faultproxy.ListParts]; n != 1 {
			t.Errorf("ListParts reached the proxy %d times over two multipart writes of one Uploader, want 1", n)
		}

		// A write failing after its upload was created: the abort is sent and taken, but cannot
		// be confirmed. The upload is really gone (checked on the server directly).
		proxy.SetRules(append([]faultproxy.Rule{{Op: faultproxy.UploadPart, PartNumber: 2,
			Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 403, Code: "AccessDenied"}}}, s3rverLike...)...)
		data := s3test.RandomBytes(2*part + 1)
		res, err := up.Upload(ctx, env.Bucket, "lacks/failed", stream.reader(data))
		checkOutcome(t, env, "lacks/failed", data, res, err, sperrors.Permanent)
		if e := (*sperrors.Error)(nil); !errors.As(err, &e) || e.AbortFailed || !strings.Contains(err.Error(), "sent, answered with success, not confirmable") {
			t.Errorf("error %v: want the abort said not confirmable, not left behind", err)
		}

		// A lost CreateMultipartUpload answer: the look for its upload cannot run, and the Result
		// says why instead of "nothing found".
		proxy.SetRules(append([]faultproxy.Rule{{Op: faultproxy.CreateMultipartUpload, Nth: 1,
			Fault: faultproxy.Fault{Kind: faultproxy.DropResponse}}}, s3rverLike...)...)
		data = s3test.RandomBytes(2*part + 1)
		res, err = up.Upload(ctx, env.Bucket, "lacks/lost-create", stream.reader(data))
		if err != nil {
			t.Fatal(err)
		}
		if !res.MaybeLeftBehind || !hasNote(res.Notes, "does not support ListMultipartUploads (HTTP 501 NotImplemented)") {
			t.Errorf("maybe left %v, notes %q: want the unlistable uploads named", res.MaybeLeftBehind, res.Notes)
		}
		left := s3test.IncompleteUploads(t, env.Srv, env.Bucket, "lacks/lost-create")
		if len(left) != 1 {
			t.Fatalf("incomplete uploads %v, want the lost create's one", left)
		}
		_, id, _ := strings.Cut(left[0], "@")
		if err := env.Store.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: env.Bucket, Key: "lacks/lost-create", UploadID: id}); err != nil {
			t.Fatal(err)
		}
		checkOutcome(t, env, "lacks/lost-create", data, res, nil, sperrors.Unknown)
	})
}

// The strict profile offers its checksum header; a store answering it 501 NotImplemented gets
// the write without it, and the refusal is noted.
func TestWireChecksumHeaderNotImplemented(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 1)
		proxy.SetRules(
			refuse(faultproxy.PutObject, "x-amz-checksum-crc32c", 501, "NotImplemented"),
			refuse(faultproxy.CreateMultipartUpload, "x-amz-checksum-algorithm", 501, "NotImplemented"),
		)
		for _, c := range []struct {
			key  string
			size int
			op   string
		}{{"hdr/single", smallSize, "PutObject"}, {"hdr/multi", 2*part + 1, "CreateMultipartUpload"}} {
			data := s3test.RandomBytes(c.size)
			res, err := writer.Upload(context.Background(), st, env.Bucket, c.key, stream.reader(data),
				func(o *writer.Options) { o.PartSize = part; o.Retry = fastPolicy() })
			checkOutcome(t, env, c.key, data, res, err, sperrors.Unknown)
			if !hasNote(res.Notes, "refused the CRC32C checksum header on "+c.op) {
				t.Errorf("%s: notes %q do not say the header was refused", c.key, res.Notes)
			}
			t.Logf("%s: verified %s", c.key, res.Verified)
		}
	})
}

// A store refusing If-None-Match (501): the create-only write, which sends it at every profile,
// goes on with the HEAD check instead, lands byte-identical, and says so; a second create-only
// write of the key is a Precondition error and changes nothing. At the default profile, which
// offers a checksum the store may refuse, the refusal is not taken for the checksum's.
func TestWireConditionalCreateNotImplemented(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 1)
		proxy.SetRules(
			refuse(faultproxy.PutObject, "If-None-Match", 501, "NotImplemented"),
			refuse(faultproxy.CompleteMultipartUpload, "If-None-Match", 501, "NotImplemented"),
		)
		for _, profile := range []string{env.Profile(), multipart.DefaultProfile} {
			for _, c := range []struct {
				key  string
				size int
				op   string
			}{{"cond/single", smallSize, "PutObject"}, {"cond/multi", 2*part + 1, "CompleteMultipartUpload"}} {
				key := profile + "/" + c.key
				opts := testOpts(env, func(o *writer.Options) { o.Profile = profile; o.Retry = fastPolicy(); o.CreateOnly = true })
				data := s3test.RandomBytes(c.size)
				res, err := writer.Upload(context.Background(), st, env.Bucket, key, stream.reader(data), opts...)
				checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
				if !hasNote(res.Notes, "the conditional create did not run: the store does not support If-None-Match: * on "+c.op+" (HTTP 501 NotImplemented)") {
					t.Errorf("%s: notes %q do not say the conditional create was replaced", key, res.Notes)
				}
				if hasNote(res.Notes, "checksum header") {
					t.Errorf("%s: notes %q blame the checksum header for the refused If-None-Match", key, res.Notes)
				}
				_, err = writer.Upload(context.Background(), st, env.Bucket, key, stream.reader(s3test.RandomBytes(c.size)), opts...)
				if !errors.Is(err, sperrors.Precondition) {
					t.Fatalf("%s again: %v, want Precondition", key, err)
				}
				checkOutcome(t, env, key, data, res, nil, sperrors.Unknown)
			}
		}
	})
}
