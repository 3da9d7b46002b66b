package writer_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// TestFirstPartsHashedWhileCreatingOnRealServers: through each adapter's own transport, the
// create's written request starts the hashing of the first parts (ahead.go), before its answer
// is handed back; the object reads back as written.
func TestFirstPartsHashedWhileCreatingOnRealServers(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		data := s3test.RandomBytes(3*part + 1)
		src := &countingReaderAt{r: bytes.NewReader(data)}
		st := &slowCreate{Store: env.Store, src: src, want: 2 * part, overHTTP: true}
		_, err := writer.Upload(context.Background(), st, env.Bucket, "ahead", src, testOpts(env, func(o *writer.Options) { o.Concurrency = 2 })...)
		if err != nil {
			t.Fatal(err)
		}
		if !st.reached.Load() {
			t.Fatalf("the create's answer came back before the first 2 parts were hashed (%d bytes read)", src.read.Load())
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, "ahead"); !bytes.Equal(got, data) {
			t.Fatal("read back differs")
		}
	})
}
