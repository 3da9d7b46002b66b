package writer_test

import (
	"testing"

	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/writer"
)

// TestCommitAnswerLostTellsWhoseObject: a create-only write that finds these very bytes at the
// key lands either way (AlreadyExisted), and CommitAnswerLost tells the two cases apart. An
// attempt the store answered (503) committed nothing, so the object was there first; an attempt
// sent whole whose answer was lost may have put it there. For the single PUT and the Complete.
func TestCommitAnswerLostTellsWhoseObject(t *testing.T) {
	for _, c := range []struct {
		name string
		size int
		op   string
	}{{"single PUT", smallSize, faulty.OpPutObject}, {"multipart", largeSize, faulty.OpCompleteMultipart}} {
		t.Run(c.name, func(t *testing.T) {
			data := randomBytes(t, c.size)
			createOnly := func(o *writer.Options) { o.CreateOnly = true; o.Retry = fastPolicy() }

			t.Run("there first, an answered failure", func(t *testing.T) {
				mem := newMem(minioLike)
				if _, err := write(t, mem, "k", data); err != nil {
					t.Fatal(err)
				}
				res, err := write(t, faulty.New(mem, faulty.First(c.op, 1, faulty.SlowDown())), "k", data, createOnly)
				if err != nil {
					t.Fatalf("create-only over these very bytes: %v, want the idempotent success", err)
				}
				if !res.AlreadyExisted || res.CommitAnswerLost || res.Failures == nil {
					t.Fatalf("already existed %v, commit answer lost %v, failures %v: want the object found there first after a 503",
						res.AlreadyExisted, res.CommitAnswerLost, res.Failures)
				}
			})

			t.Run("this write's own, a lost answer", func(t *testing.T) {
				mem := newMem(minioLike)
				res, err := write(t, faulty.New(mem, faulty.First(c.op, 1, faulty.DropResponse())), "k", data, createOnly)
				if err != nil {
					t.Fatalf("create-only whose first commit's answer was lost: %v", err)
				}
				if !res.AlreadyExisted || !res.CommitAnswerLost {
					t.Fatalf("already existed %v, commit answer lost %v: want the object found after a lost answer, maybe this write's own",
						res.AlreadyExisted, res.CommitAnswerLost)
				}
				mustLand(t, mem, "k", data, res, err, res.Verified)
			})

			t.Run("no fault", func(t *testing.T) {
				mem := newMem(minioLike)
				res, err := write(t, mem, "k", data, createOnly)
				if err != nil || res.AlreadyExisted || res.CommitAnswerLost {
					t.Fatalf("err %v, already existed %v, commit answer lost %v: want a plain create", err, res.AlreadyExisted, res.CommitAnswerLost)
				}
			})
		})
	}
}
