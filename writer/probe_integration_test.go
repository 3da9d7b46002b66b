package writer_test

import (
	"context"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// TestRealServerProbeOwnUpload: at defaults (no profile), through both adapters on every server,
// a fresh Uploader's first multipart write asks whether the server checks part checksums in an
// upload of its own on the key, and leaves it aborted: the write's upload received the write's
// parts alone, the object is the bytes written, and no incomplete upload of the key remains.
func TestRealServerProbeOwnUpload(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		st := &partLog{Store: env.Store}
		u, err := writer.NewUploader(st)
		if err != nil {
			t.Fatal(err)
		}
		const key = "probe-own-upload"
		data := randomBytes(t, largeSize)
		w, err := u.New(context.Background(), env.Bucket, key, func(o *writer.Options) { o.PartSize = 5 * mib })
		if err != nil {
			t.Fatal(err)
		}
		res, err := closeWith(w, data)
		landedOnServer(t, env, key, data, res, err)
		var mine, probes int
		for _, p := range st.parts {
			switch {
			case p.uploadID == res.UploadID && !p.probe:
				mine++
			case p.uploadID == res.UploadID:
				t.Errorf("the probe's part went to the write's upload: %+v", p)
			case p.probe:
				probes++
			default:
				t.Errorf("a part of the write went to another upload: %+v", p)
			}
		}
		if mine != 3 || probes != 1 || len(st.created) != 1 || len(st.aborted) != 1 || st.aborted[0] != st.created[0] {
			t.Errorf("the write's upload received %d parts (want 3); the probe sent %d parts to uploads %v and aborted %v (want one, its own, aborted)",
				mine, probes, st.created, st.aborted)
		}
		if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key); len(ups) != 0 {
			t.Errorf("incomplete uploads of the key left: %v", ups)
		}
	})
}
