package writer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// sseCases are the encryptions asked for in the unit tests, with the encryption each store
// that honours them reports.
func sseCases(key []byte) []struct {
	name string
	opt  func(*writer.Options)
	want store.Encryption
} {
	return []struct {
		name string
		opt  func(*writer.Options)
		want store.Encryption
	}{
		{"SSE-S3", func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSES3} }, store.Encryption{Type: store.SSES3}},
		{"SSE-KMS", func(o *writer.Options) {
			o.Encryption = store.Encryption{Type: store.SSEKMS, KMSKeyID: "k1", KMSContext: map[string]string{"app": "safeput"}, BucketKey: true}
		}, store.Encryption{Type: store.SSEKMS, KMSKeyID: "k1", BucketKey: true}},
		{"SSE-C", func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: key} }, store.Encryption{Type: store.SSEC, CustomerKeyMD5: store.CustomerKey(key).MD5()}},
	}
}

// Unit: each encryption asked for is sent on the single PUT and the multipart upload (and for
// SSE-C the key on every part, HEAD and GET, which memstore checks), and Result says what the
// store reported.
func TestEncryptionHonoured(t *testing.T) {
	key := randomBytes(t, 32)
	for _, c := range sseCases(key) {
		for _, size := range []int{smallSize, largeSize} {
			t.Run(fmt.Sprintf("%s/%d", c.name, size), func(t *testing.T) {
				mem := newMem(minioLike)
				data := randomBytes(t, size)
				res, err := write(t, mem, "k", data, c.opt)
				mustLand(t, mem, "k", data, res, err, verify.MethodCRC32C)
				if got := res.Encryption; got.Type != c.want.Type || got.KMSKeyID != c.want.KMSKeyID || got.CustomerKeyMD5 != c.want.CustomerKeyMD5 || len(got.CustomerKey) != 0 {
					t.Fatalf("Result.Encryption %v, want %v", got, c.want)
				}
			})
		}
	}
}

// Unit: a store that ignores the SSE headers and answers 200 stores plaintext: the write fails
// with a Compatibility error coded EncryptionNotApplied that names what was asked and what the
// store reported, and the object is gone. For SSE-C the HEAD with the key is refused (the object
// is not SSE-C), and a plain HEAD shows what is there.
func TestEncryptionIgnoredFailsAndDeletes(t *testing.T) {
	key := randomBytes(t, 32)
	for _, c := range sseCases(key) {
		for _, size := range []int{smallSize, largeSize} {
			t.Run(fmt.Sprintf("%s/%d", c.name, size), func(t *testing.T) {
				mem := newMem(memstore.Rules{NoDefaultChecksum: true, IgnoreSSE: true})
				_, err := write(t, mem, "k", randomBytes(t, size), c.opt)
				var e *sperrors.Error
				if !errors.As(err, &e) || e.Kind != sperrors.Compatibility || e.Code != sperrors.CodeEncryptionNotApplied {
					t.Fatalf("err %v, want Compatibility coded %s", err, sperrors.CodeEncryptionNotApplied)
				}
				msg := err.Error()
				for _, want := range []string{"asked for " + c.want.String(), "the store reports none", "object was deleted"} {
					if !strings.Contains(msg, want) {
						t.Errorf("the error does not say %q: %s", want, msg)
					}
				}
				if e.ObjectLeft {
					t.Errorf("ObjectLeft set, but the object was deleted: %v", err)
				}
				mustBeAbsent(t, mem, "k")
			})
		}
	}
}

// Unit: a KMS key reported as an ARN ending in the key asked for is the key asked for; another
// key is not.
func TestEncryptionKMSKeyARN(t *testing.T) {
	mem := newMem(minioLike)
	data := randomBytes(t, smallSize)
	res, err := write(t, mem, "k", data, func(o *writer.Options) {
		o.Encryption = store.Encryption{Type: store.SSEKMS, KMSKeyID: "arn:aws:kms:k1", KMSContext: nil, BucketKey: false}
	})
	mustLand(t, mem, "k", data, res, err, verify.MethodCRC32C)
	// memstore reports the id as sent; the comparison is what is checked here.
	for _, c := range []struct {
		asked, got string
		ok         bool
	}{
		{"k1", "arn:aws:kms:k1", true},
		{"k1", "arn:aws:kms:eu-west-1:111122223333:key/k1", true},
		{"k1", "k1", true},
		{"k1", "arn:aws:kms:k2", false},
		{"k1", "", false},
		{"k1", "xk1", false},
	} {
		if got := (store.Encryption{Type: store.SSEKMS, KMSKeyID: c.asked}).Unmet(store.Encryption{Type: store.SSEKMS, KMSKeyID: c.got}) == ""; got != c.ok {
			t.Errorf("asked %q, reported %q: accepted %v, want %v", c.asked, c.got, got, c.ok)
		}
	}
}

// Unit: bad encryption options fail before anything is sent, naming the rule.
func TestEncryptionInvalid(t *testing.T) {
	mem := newMem(memstore.Rules{})
	for _, c := range []struct {
		opt  func(*writer.Options)
		want string
	}{
		{func(o *writer.Options) {
			o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: make([]byte, 16)}
		}, "16 bytes, want 32"},
		{func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: nil} }, "0 bytes, want 32"},
		{func(o *writer.Options) { o.Encryption = store.Encryption{Type: "aws:kms:dsse"} }, "unknown type"},
		{func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSES3, KMSKeyID: "k"} }, "only the type"},
	} {
		_, err := writer.New(context.Background(), mem, unitBucket, "k", c.opt)
		var e *sperrors.Error
		if !errors.As(err, &e) || e.Kind != sperrors.Permanent || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want Permanent naming %q", err, c.want)
		}
	}
	if mem.Requests("PutObject")+mem.Requests("CreateMultipartUpload") != 0 {
		t.Fatal("an invalid option sent a request")
	}
}

// Unit: an SSE-C key never appears in the error, the logs, the Result or its JSON, in raw,
// base64 or hex form, whether the write lands or fails.
func TestSSECKeyNeverLeaks(t *testing.T) {
	key := randomBytes(t, 32)
	forms := []string{string(key), base64.StdEncoding.EncodeToString(key), fmt.Sprintf("%x", key), fmt.Sprintf("%v", key)}
	for _, rules := range []memstore.Rules{minioLike, {NoDefaultChecksum: true, IgnoreSSE: true}} {
		for _, size := range []int{smallSize, largeSize} {
			var logs bytes.Buffer
			enc := zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig())
			// Locked: the write logs from its own goroutines (parts, the probe) as well as the caller's.
			log := zap.New(zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(&logs)), zap.DebugLevel))
			mem := newMem(rules)
			res, err := write(t, mem, "k", randomBytes(t, size), func(o *writer.Options) {
				o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: key}
				o.Logger = log
			})
			var out bytes.Buffer
			fmt.Fprintf(&out, "%v\n%+v\n%#v\n", err, err, res)
			if res != nil {
				fmt.Fprintf(&out, "%+v\n%#v\n%s\n", *res, res.Encryption, res.Encryption)
				j, jerr := json.Marshal(res)
				if jerr != nil {
					t.Fatal(jerr)
				}
				out.Write(j)
			}
			if rules.IgnoreSSE == (err == nil) {
				t.Fatalf("IgnoreSSE %v: err %v", rules.IgnoreSSE, err)
			}
			out.Write(logs.Bytes())
			for _, f := range forms {
				if bytes.Contains(out.Bytes(), []byte(f)) {
					t.Fatalf("the SSE-C key (as %.12q…) appears in the outputs:\n%s", f, out.String())
				}
			}
		}
	}
}

// Unit: a journal record of an SSE-C upload keeps the key's MD5, never the key; Recover HEADs
// the object with the key the caller gives (picked by that MD5), and without it fails the
// record, naming the MD5, and keeps it.
func TestRecoverSSEC(t *testing.T) {
	key := randomBytes(t, 32)
	mem := newMem(minioLike)
	data := randomBytes(t, largeSize)
	res, err := write(t, mem, "k", data, func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: key} })
	mustLand(t, mem, "k", data, res, err, verify.MethodCRC32C)

	dir := t.TempDir()
	j, err := journal.Create(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	id := journal.ID{Endpoint: endpointID, Bucket: unitBucket, Key: "k", UploadID: "lost-complete"}
	rec := journal.Record{ID: id, PartSize: 5 * mib, SourceSize: int64(len(data)), ChecksumAlgorithm: string(res.Checksum.Algorithm),
		SSE: string(store.SSEC), SSECustomerKeyMD5: store.CustomerKey(key).MD5()}
	if err := j.Begin(rec); err != nil {
		t.Fatal(err)
	}
	if err := j.Intend(id, journal.Object{Size: res.Size, ChecksumAlgorithm: string(res.Checksum.Algorithm), Checksum: res.Checksum.Value}); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(id); err != nil {
		t.Fatal(err)
	}
	opts := writer.RecoverOptions{Endpoint: endpointID, Settle: -1}
	rep, err := writer.Recover(context.Background(), mem, j.Path(), opts)
	if err != nil || len(rep.Uploads) != 1 || rep.Uploads[0].Outcome != writer.RecoverFailed ||
		!strings.Contains(fmt.Sprint(rep.Uploads[0].Err), rec.SSECustomerKeyMD5) {
		t.Fatalf("without the key: %+v, %v; want failed naming the key's MD5", rep, err)
	}
	opts.SSECustomerKeys = [][]byte{randomBytes(t, 32), key}
	rep, err = writer.Recover(context.Background(), mem, j.Path(), opts)
	if err != nil || len(rep.Uploads) != 1 || rep.Uploads[0].Outcome != writer.RecoverLanded {
		t.Fatalf("with the key: %+v, %v; want landed", rep, err)
	}
	// The journal never held the key, in any form.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, f := range []string{string(key), base64.StdEncoding.EncodeToString(key), fmt.Sprintf("%x", key)} {
			if bytes.Contains(b, []byte(f)) {
				t.Errorf("the SSE-C key is in journal file %s", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Unit: a create-only SSE-C write onto a key that holds another object (plaintext, or under
// another key), whose HEAD with this write's key the store refuses, is a Precondition error and
// the object is left as it was.
func TestCreateOnlySSECOntoAnotherObject(t *testing.T) {
	mem := newMem(minioLike)
	old := randomBytes(t, smallSize)
	if _, err := write(t, mem, "k", old); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{smallSize, largeSize} {
		_, err := write(t, mem, "k", randomBytes(t, size), func(o *writer.Options) {
			o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: randomBytes(t, 32)}
			o.CreateOnly = true
		})
		var e *sperrors.Error
		if !errors.As(err, &e) || e.Kind != sperrors.Precondition || e.ObjectLeft {
			t.Fatalf("size %d: err %v, want Precondition", size, err)
		}
		if got, _ := mem.Object(unitBucket, "k"); !bytes.Equal(got, old) {
			t.Fatal("the existing object was changed")
		}
		if ups := mem.Uploads(unitBucket); len(ups) != 0 {
			t.Fatalf("incomplete uploads left: %v", ups)
		}
	}
}

// Unit: an SSE-C upload that never reached Complete is aborted by Recover without its key: only
// checking an intended object needs it.
func TestRecoverAbortsSSECUploadWithoutKey(t *testing.T) {
	key := randomBytes(t, 32)
	mem := newMem(minioLike)
	ctx := context.Background()
	up, err := mem.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: unitBucket, Key: "k",
		Encryption: store.Encryption{Type: store.SSEC, CustomerKey: key}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Create(filepath.Join(t.TempDir(), "journal"))
	if err != nil {
		t.Fatal(err)
	}
	id := journal.ID{Endpoint: endpointID, Bucket: unitBucket, Key: "k", UploadID: up.UploadID}
	if err := j.Begin(journal.Record{ID: id, PartSize: 5 * mib, SourceSize: -1, SSE: string(store.SSEC), SSECustomerKeyMD5: store.CustomerKey(key).MD5()}); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(id); err != nil {
		t.Fatal(err)
	}
	rep, err := writer.Recover(ctx, mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, Settle: -1})
	if err != nil || len(rep.Uploads) != 1 || rep.Uploads[0].Outcome != writer.RecoverAborted {
		t.Fatalf("%+v, %v; want aborted", rep, err)
	}
	if ups := mem.Uploads(unitBucket); len(ups) != 0 {
		t.Fatalf("uploads left: %v", ups)
	}
}
