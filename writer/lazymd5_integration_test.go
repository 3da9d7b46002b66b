package writer_test

import (
	"context"
	"testing"

	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// TestRealServerMD5OnlyWhenNeeded: at defaults (no profile), through both adapters on every
// server, writes from one Uploader end strongly verified by the store's own evidence (no
// read-back), and hash by MD5 only what that evidence needs: on a server that checks, echoes and
// reports the checksum (the gateway, MinIO) no multipart write hashes anything, the first
// included (the server refused the probe's wrong checksum), and a fresh Uploader's first single
// PUT its body (the probe it sends answers after its own PUT); on one that ignores checksum headers (Ceph RGW) every byte, for the MD5
// ETags that prove it there.
func TestRealServerMD5OnlyWhenNeeded(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		u, err := writer.NewUploader(env.Store)
		if err != nil {
			t.Fatal(err)
		}
		small, large := randomBytes(t, smallSize), randomBytes(t, largeSize)
		for i, c := range []struct {
			key  string
			data []byte
		}{{"md5-first", large}, {"md5-second", large}, {"md5-single", small}, {"md5-single-fresh", small}} {
			if i == 3 {
				if u, err = writer.NewUploader(env.Store); err != nil {
					t.Fatal(err)
				}
			}
			w, err := u.New(context.Background(), env.Bucket, c.key, func(o *writer.Options) {
				o.PartSize = 5 * mib
				o.Threshold = 5 * mib
				o.Concurrency = 1
				o.ReadBackLimit = 0
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := closeWith(w, c.data)
			landedOnServer(t, env, c.key, c.data, res, err)
			hashed := writer.MD5Bytes(w)
			t.Logf("%s %s: verified %s, %d bytes hashed by MD5", env.Adapter, c.key, res.Verified, hashed)
			var want int64
			switch {
			case env.Srv.IgnoresChecksums():
				want = int64(len(c.data))
				if res.Verified != verify.MethodETagMD5 {
					t.Errorf("%s: verified %s, want %s", c.key, res.Verified, verify.MethodETagMD5)
				}
			case i == 3:
				want = smallSize
			}
			switch {
			case i == 3:
				// A fresh Uploader does not know the store checks: the MD5 is taken, and the
				// answer's ETag proves the object.
				if res.Verified != verify.MethodETagMD5 || res.VerifiedBy != "PutObject" {
					t.Errorf("%s: verified %s by %s, want %s by PutObject", c.key, res.Verified, res.VerifiedBy, verify.MethodETagMD5)
				}
			case !env.Srv.IgnoresChecksums() && res.Verified != verify.MethodCRC32C:
				t.Errorf("%s: verified %s, want %s", c.key, res.Verified, verify.MethodCRC32C)
			}
			if hashed != want {
				t.Errorf("%s: %d bytes hashed by MD5, want %d", c.key, hashed, want)
			}
		}
	})
}
