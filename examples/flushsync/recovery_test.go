package flushsync

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/safeput/safeput/storetest/faulty"
	journal "github.com/safeput/safeput/storetest/journaltest"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// A process that died mid-flush left an open multipart upload in its journal; the next
// manager settles it before running anything, then the re-driven task lands the segment.
func TestManagerRecoversJournalAtStart(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		const endpoint = "flushsync-test"
		dir := filepath.Join(t.TempDir(), "journal")
		files := []File{{Name: "vector.bin", Data: payload(42, 11<<20)}}
		opts := []func(*writer.Options){func(o *writer.Options) {
			o.Profile = "versitygw"
			o.PartSize = 5 << 20
			o.Concurrency = 1
			o.Retry = fastPolicy()
			o.JournalDir, o.JournalEndpoint = dir, endpoint
		}}
		// The dead predecessor: part 2 refused, and its abort never sent (refused here).
		dead := &SegmentTask{Uploader: newUploader(t, faulty.New(env.Store,
			faulty.Rule{Op: "UploadPart", Part: 2, Fault: faulty.Forbidden()},
			faulty.Always("AbortMultipartUpload", faulty.Forbidden())), opts...),
			Bucket: env.Bucket, Chan: "ch0", Segment: 1, Files: files}
		if err := dead.Prepare(context.Background()); err == nil {
			t.Fatal("the dying flush succeeded")
		}
		if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, "ch0/"); len(ups) != 1 {
			t.Fatalf("incomplete uploads left by the dead flush = %v, want 1", ups)
		}

		// The next process: one Uploader, recovering first, then writing.
		up := newUploader(t, env.Store, opts...)
		mgr := NewManager(context.Background(), Config{Workers: 2, Recovery: &Recovery{Uploader: up}})
		rep, err := mgr.Recovered()
		if err != nil || rep == nil || rep.Counts[writer.RecoverAborted] != 1 {
			t.Fatalf("start-up recovery = %+v, %v; want one upload aborted", rep, err)
		}
		if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, "ch0/"); len(ups) != 0 {
			t.Fatalf("incomplete uploads after start-up recovery: %v", ups)
		}
		task := &SegmentTask{Uploader: up, Bucket: env.Bucket, Chan: "ch0", Segment: 1, Files: files}
		if err := mgr.Submit(task); err != nil {
			t.Fatal(err)
		}
		mgr.Close()
		if st := mgr.Stats(); st.Done != 1 {
			t.Fatalf("stats after the re-driven flush = %+v", st)
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, task.FileKey("vector.bin")); !bytes.Equal(got, files[0].Data) {
			t.Fatal("the re-driven segment file differs from its buffer")
		}
		j, err := journal.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if recs, problems, _ := j.List(); len(recs) != 0 || len(problems) != 0 {
			t.Fatalf("journal after the flush: %+v, %v", recs, problems)
		}
	})
}
