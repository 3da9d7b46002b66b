package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// createRaceRounds is how many times each race is run per size and profile: enough that a HEAD
// check raced by the other writer was seen to let both land (at defaults, before create-only
// sent If-None-Match), few enough for the test budget.
const createRaceRounds = 5

// Two writers race a create-only write of different bytes to one new key (two flush nodes after
// a failover), at the default profile and at the server's own, with one PutObject and with a
// multipart upload: exactly one lands, the other fails Precondition, the key reads back as the
// winner's bytes, and no incomplete upload is left. Both writers send their bytes first and
// commit together (Close), so their checks and commits interleave.
//
// A server that ignores If-None-Match on Complete (Ceph RGW) cannot keep a second multipart
// commit out: there both may land, the later one replacing the other. What still holds there is
// asserted: at least one lands, every failure is Precondition (a writer that finds the other's
// object where its own should be leaves it alone), the key holds a winner's bytes, nothing is
// left behind.
func TestCreateOnlyRace(t *testing.T) {
	t.Parallel() // mostly waiting on the racing writers: beside the other waiting tests
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, profile := range []string{multipart.DefaultProfile, env.Profile()} {
			for _, c := range []struct {
				name      string
				size      int
				multipart bool
			}{{"single", 64 << 10, false}, {"multipart", 2*part + 1, true}} {
				exact := !c.multipart || !env.Srv.IgnoresConditionalComplete()
				for round := range createRaceRounds {
					key := fmt.Sprintf("race/%s/%s/%d", profile, c.name, round)
					raceCreateOnly(t, env, profile, key, c.size, exact)
				}
			}
		}
	})
}

// raceCreateOnly runs one race and checks its outcome; exact: the store keeps the second commit
// out, so exactly one writer may land.
func raceCreateOnly(t *testing.T, env testkit.Env, profile, key string, size int, exact bool) {
	t.Helper()
	bodies := [2][]byte{s3test.RandomBytes(size), s3test.RandomBytes(size)}
	var (
		ready, commit sync.WaitGroup
		results       [2]*writer.Result
		errs          [2]error
		done          sync.WaitGroup
	)
	ready.Add(2)
	commit.Add(1)
	done.Add(2)
	for i := range 2 {
		go func() {
			defer done.Done()
			opts := []func(*writer.Options){func(o *writer.Options) {
				o.Profile, o.PartSize, o.CreateOnly = profile, part, true
			}}
			w, err := writer.New(context.Background(), env.Store, env.Bucket, key, opts...)
			if err != nil {
				errs[i] = err
				ready.Done()
				return
			}
			_, werr := w.Write(bodies[i])
			ready.Done()
			commit.Wait()
			errs[i] = errors.Join(werr, w.Close())
			results[i] = w.Result()
		}()
	}
	ready.Wait()
	commit.Done()
	done.Wait()

	var landed []int
	for i, err := range errs {
		switch {
		case err == nil:
			landed = append(landed, i)
			if results[i] == nil || results[i].AlreadyExisted {
				t.Errorf("%s: writer %d landed with result %+v, want a fresh object", key, i, results[i])
			}
		case !errors.Is(err, sperrors.Precondition):
			t.Errorf("%s: writer %d failed %s, want Precondition for a lost race: %v", key, i, sperrors.KindOf(err), err)
		}
	}
	if ids := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key); len(ids) != 0 {
		t.Errorf("%s: incomplete uploads left: %v", key, ids)
	}
	switch {
	case len(landed) == 0:
		t.Errorf("%s: neither writer landed: %v; %v", key, errs[0], errs[1])
		return
	case len(landed) == 2 && exact:
		t.Errorf("%s: both create-only writers reported success: one replaced the other", key)
	case len(landed) == 2:
		t.Logf("%s: both landed: the server ignores If-None-Match on Complete, the later commit replaced the other", key)
	}
	if !s3test.Exists(t, env.Srv, env.Bucket, key) {
		t.Errorf("%s: no object at the key, though writer(s) %v landed", key, landed)
		return
	}
	got := s3test.ReadAll(t, env.Srv, env.Bucket, key)
	for _, i := range landed {
		if bytes.Equal(got, bodies[i]) {
			return
		}
	}
	t.Errorf("%s: the key holds %d bytes that are no landed writer's (landed: %v; errors: %v; %v)", key, len(got), landed, errs[0], errs[1])
}
