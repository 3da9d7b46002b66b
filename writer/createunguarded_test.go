package writer_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// ignoredThenFollowed is a store that ignores If-None-Match (as Ceph RGW does on Complete) and
// on which another writer's create-only commit of the key lands right after this write's first
// one, before this write's HEAD: the race a HEAD before the commit cannot close.
type ignoredThenFollowed struct {
	store.Store
	mem   *memstore.Store
	other []byte
	once  sync.Once
}

func (s *ignoredThenFollowed) follow(ctx context.Context, bucket, key string) {
	s.once.Do(func() {
		_, _ = s.mem.PutObject(ctx, &store.PutObjectInput{Bucket: bucket, Key: key, Body: bytes.NewReader(s.other), ContentLength: int64(len(s.other))})
	})
}

func (s *ignoredThenFollowed) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	c := *in
	c.IfNoneMatch = false
	out, err := s.Store.PutObject(ctx, &c)
	if err == nil {
		s.follow(ctx, in.Bucket, in.Key)
	}
	return out, err
}

func (s *ignoredThenFollowed) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	c := *in
	c.IfNoneMatch = false
	out, err := s.Store.CompleteMultipartUpload(ctx, &c)
	if err == nil {
		s.follow(ctx, in.Bucket, in.Key)
	}
	return out, err
}

// A create-only write whose commit the store did not refuse, followed by another writer's commit
// of the key before its HEAD, lost the race: it fails Precondition and leaves the other object in
// place, whatever tells the objects apart (the commit's ETag, or the parts' ETags where the
// store's Complete answers none). Before, it took that object for its own damaged one, deleted
// it (Integrity), and the other writer's HEAD then found nothing (Permanent).
func TestCreateOnlyUnguardedCommitFollowedByAnother(t *testing.T) {
	for _, c := range []struct {
		name string
		r    memstore.Rules
		size int
	}{
		// Checksum headers ignored: no answer proves the object, the HEAD after the commit decides.
		{"single PUT", memstore.Rules{IgnoreChecksumHeaders: true}, smallSize},
		{"multipart", memstore.Rules{IgnoreChecksumHeaders: true}, largeSize},
		{"multipart, Complete answers no ETag", cephLike, largeSize},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(c.r)
			other := randomBytes(t, c.size)
			st := &ignoredThenFollowed{Store: mem, mem: mem, other: other}
			_, err := write(t, st, "k", randomBytes(t, c.size), func(o *writer.Options) { o.CreateOnly = true })
			if !errors.Is(err, sperrors.Precondition) {
				t.Fatalf("err %v (%s), want Precondition", err, sperrors.KindOf(err))
			}
			got, ok := mem.Object(unitBucket, "k")
			if !ok || !bytes.Equal(got, other) {
				t.Fatalf("the other writer's object was not left in place (present %v)", ok)
			}
			if ups := mem.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("uploads left: %v", ups)
			}
		})
	}
}

// A store that does not support If-None-Match (501), at the default profile, which offers a
// checksum: the refusal is the condition's, not the checksum's, and the write lands on the HEAD
// check; where the store refuses the checksum header too, both are dropped, each with its note.
func TestCreateOnlyConditionRefusedBesideOfferedChecksum(t *testing.T) {
	for _, c := range []struct {
		name          string
		r             memstore.Rules
		checksumNoted bool
	}{
		{"condition refused", memstore.Rules{NoConditionalWrites: true}, false},
		{"condition and checksum refused", memstore.Rules{NoConditionalWrites: true, RejectChecksumHeaders: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(c.r)
			data := randomBytes(t, smallSize)
			res, err := write(t, mem, "k", data, func(o *writer.Options) { o.CreateOnly = true })
			mustLand(t, mem, "k", data, res, err, res.Verified)
			if !hasNote(res.Notes, "the conditional create did not run", "If-None-Match: * on PutObject") {
				t.Errorf("notes %q do not say the conditional create was replaced", res.Notes)
			}
			if got := hasNote(res.Notes, "refused the CRC32C checksum header"); got != c.checksumNoted {
				t.Errorf("notes %q: checksum header refused noted %v, want %v", res.Notes, got, c.checksumNoted)
			}
		})
	}
}
