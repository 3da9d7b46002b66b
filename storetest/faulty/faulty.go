// Package faulty wraps a store.Store and injects faults: error responses (SlowDown(),
// InternalError(), ...), connection resets, lost responses, hangs, and a lying store that keeps
// corrupted data and answers OK. It serves unit tests, the randomized fault campaign and the
// front ends' test builds (Parse).
//
// Rules pick the calls to fault by operation, key prefix, part number and call count ("fail the
// first two UploadPart calls of part 3"); Random faults calls with a seeded probability. Every
// injected fault is recorded, so tests can assert what happened. Invalid input is rejected as the
// Store contract requires and a call whose context is already done is passed through; neither
// is counted or faulted.
//
// Test support: storetest and the packages under it (memstore, faulty, faultproxy, wirekit,
// testkit, testcerts, s3test, journaltest) are not covered by safeput's compatibility promise; they change with the
// tests they serve, in any release.
package faulty

import (
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // S3's SHA1 checksum algorithm; not for security.
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/minio/crc64nvme"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// Rule selects calls and the fault to inject into them.
//
// A call matches when its operation is Op ("" or AnyOp: every operation), its key starts with
// KeyPrefix (for ListMultipartUploads the key is the listing prefix), its part number is Part
// (0: any; only UploadPart calls have one) and the fault applies to the operation (see
// Fault.AppliesTo; Truncate() and FlipByte() also need a non-empty body). Each rule numbers the
// calls it matches from 1; it fires on calls Skip+1 .. Skip+Times (Times 0: every call after
// Skip). When several rules would fire on one call the first in order wins; every matching rule
// still counts the call.
//
// The requests of a writer's checksum probe (its own upload on the write's key: a create, a
// tiny part, an abort; their context carries writer.SaveProbe) match only a rule with Probe set,
// or one for every operation (AnyOp): a rule naming an operation counts the write's own calls.
type Rule struct {
	Op        string
	KeyPrefix string
	Part      int32
	Skip      int
	Times     int
	Fault     Fault
	Probe     bool // match only the checksum probe's requests

	random *randomSpec
}

type randomSpec struct {
	seed   int64
	prob   float64
	faults []Fault
}

// First faults the first n calls of op; with n < 1 it never fires.
func First(op string, n int, f Fault) Rule {
	if n < 1 {
		return Rule{Op: op}
	}
	return Rule{Op: op, Times: n, Fault: f}
}

// Nth faults only the nth call of op (counted from 1); with n < 1 it never fires.
func Nth(op string, n int, f Fault) Rule {
	if n < 1 {
		return Rule{Op: op}
	}
	return Rule{Op: op, Skip: n - 1, Times: 1, Fault: f}
}

// Always faults every call of op.
func Always(op string, f Fault) Rule { return Rule{Op: op, Fault: f} }

// Random returns a rule for a randomized campaign: each matching call is faulted with the given
// probability, with a fault drawn uniformly from those in faults that apply to the call. The
// draws come from a generator seeded with seed (one per Store the rule is given to), so a
// campaign replays exactly for the same sequence of calls; concurrent callers make that
// sequence itself vary. The returned rule matches every operation; set its Op, KeyPrefix, Part,
// Skip and Times to narrow it (Skip and Times then select the calls that may be faulted). With
// no faults it never fires.
func Random(seed int64, probability float64, faults ...Fault) Rule {
	if math.IsNaN(probability) {
		probability = 0
	}
	return Rule{Op: AnyOp, random: &randomSpec{seed: seed, prob: min(max(probability, 0), 1), faults: append([]Fault(nil), faults...)}}
}

// Injection records one injected fault.
type Injection struct {
	// Seq numbers injections from 1 in the order they were decided.
	Seq      int
	Op       string
	Bucket   string
	Key      string
	UploadID string
	Part     int32
	Fault    Fault
	// Rule is the index of the rule that fired, as given to New.
	Rule int
	// Probe: the call was a request of a writer's checksum probe.
	Probe bool
}

// String describes the injection for logs.
func (i Injection) String() string {
	s := fmt.Sprintf("#%d %s on %s %s/%s", i.Seq, i.Fault, i.Op, i.Bucket, i.Key)
	if i.Part != 0 {
		s += fmt.Sprintf(" part %d", i.Part)
	}
	return s
}

// Store is a store.Store that injects faults into calls to an inner store. It is safe for
// concurrent use.
type Store struct {
	inner store.Store

	mu       sync.Mutex
	rules    []*ruleState
	injected []Injection
}

var _ store.Store = (*Store)(nil)

type ruleState struct {
	Rule
	matched int
	rng     *rand.Rand
}

// New wraps inner with rules. A nil inner store answers every call that reaches it with an
// error, so a misconfigured test fails instead of panicking.
func New(inner store.Store, rules ...Rule) *Store {
	if inner == nil {
		inner = noStore{}
	}
	s := &Store{inner: inner}
	for _, r := range rules {
		st := &ruleState{Rule: r}
		st.Skip, st.Times = max(st.Skip, 0), max(st.Times, 0)
		if r.random != nil {
			st.rng = rand.New(rand.NewPCG(uint64(r.random.seed), 0x5afe907)) //nolint:gosec // reproducible test faults, not security
		}
		s.rules = append(s.rules, st)
	}
	return s
}

// Unwrap returns the store faults are injected in front of, and with it its capabilities
// (store.Find).
func (s *Store) Unwrap() store.Store { return s.inner }

// Injected returns a copy of every injection so far, in order.
func (s *Store) Injected() []Injection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Injection(nil), s.injected...)
}

// Count returns how many times f was injected.
func (s *Store) Count(f Fault) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, i := range s.injected {
		if i.Fault == f {
			n++
		}
	}
	return n
}

// call describes one call for matching and recording.
type call struct {
	op, bucket, key, uploadID string
	part                      int32
	bodyLen                   int64
	probe                     bool // a request of a writer's checksum probe
}

func (c call) String() string {
	s := c.bucket + "/" + c.key
	if c.part != 0 {
		s += fmt.Sprintf(" part %d", c.part)
	}
	return s
}

func (r *ruleState) matches(c call, f Fault) bool {
	every := r.Op == "" || r.Op == AnyOp
	return (every || r.Op == c.op) && (r.Probe == c.probe || (every && !r.Probe)) &&
		strings.HasPrefix(c.key, r.KeyPrefix) &&
		(r.Part == 0 || r.Part == c.part) &&
		applies(f, c)
}

func applies(f Fault, c call) bool {
	return f.AppliesTo(c.op) && (!f.needsBytes() || c.bodyLen > 0)
}

// decide returns the fault to inject into c, if any, and records it.
func (s *Store) decide(ctx context.Context, c call) (Fault, int, bool) {
	if ctx != nil && ctx.Err() != nil {
		return Fault{}, 0, false // nothing would be sent; the inner store reports the context
	}
	c.probe = ctx != nil && ctx.Value(writer.SaveProbe) == true
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		chosen Fault
		fired  bool
		ruleIx int
	)
	for i, r := range s.rules {
		f, ok := r.candidate(c)
		if !ok {
			continue
		}
		r.matched++
		inWindow := r.matched > r.Skip && (r.Times == 0 || r.matched <= r.Skip+r.Times)
		if r.random != nil && inWindow {
			// Draw even when an earlier rule fired, so this rule's stream depends only on the
			// calls it matched.
			var avail []Fault
			for _, rf := range r.random.faults {
				if applies(rf, c) {
					avail = append(avail, rf)
				}
			}
			hit := r.rng.Float64() < r.random.prob
			pick := r.rng.IntN(len(avail)) // candidate guarantees avail is not empty
			f, inWindow = avail[pick], hit
		}
		if inWindow && !fired {
			chosen, fired, ruleIx = f, true, i
		}
	}
	if !fired {
		return Fault{}, 0, false
	}
	s.injected = append(s.injected, Injection{
		Seq: len(s.injected) + 1, Op: c.op, Bucket: c.bucket, Key: c.key, UploadID: c.uploadID, Part: c.part, Fault: chosen, Rule: ruleIx,
		Probe: c.probe,
	})
	return chosen, len(s.injected), true
}

// candidate reports whether r matches c, and its fault (for a random rule, any that applies).
func (r *ruleState) candidate(c call) (Fault, bool) {
	if r.random == nil {
		return r.Fault, r.matches(c, r.Fault)
	}
	for _, f := range r.random.faults {
		if r.matches(c, f) {
			return f, true
		}
	}
	return Fault{}, false
}

func requestID(seq int) string { return fmt.Sprintf("FAULTY%010d", seq) }

// fail produces the error of a fault that does not involve the inner store.
func fail(ctx context.Context, f Fault, seq int, c call, body io.Reader) error {
	switch f.kind {
	case kindReset:
		if body != nil && c.bodyLen > 0 {
			// Send half the body before the connection drops, as a reset mid-upload would.
			_, _ = io.CopyN(io.Discard, body, c.bodyLen/2)
			return fmt.Errorf("%s %s: %w", c.op, c, connReset(true))
		}
		return fmt.Errorf("%s %s: %w", c.op, c, connReset(false))
	case kindHang:
		if ctx == nil {
			ctx = context.Background()
		}
		<-ctx.Done()
		return fmt.Errorf("%s %s: %w", c.op, c, ctx.Err())
	}
	return f.responseError(c.op, requestID(seq))
}

// lost is the error a caller sees when the answer never arrives. It deliberately does not wrap
// the inner store's error: the caller cannot know what the store said.
func lost(c call) error {
	return fmt.Errorf("%s %s: response lost: %w", c.op, c, io.ErrUnexpectedEOF)
}

// corrupt reads the body and returns the bytes to send instead under f, or the bytes read and
// false when the body was shorter than announced (then the inner store sees the short body).
func corrupt(f Fault, c call, body io.Reader) ([]byte, bool, error) {
	var buf bytes.Buffer
	// Room for the whole body up front, as memstore's readBody: grown by ReadFrom, a part is
	// copied again and again.
	buf.Grow(int(max(0, min(c.bodyLen, 64<<20))) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(body, c.bodyLen)); err != nil {
		return nil, false, fmt.Errorf("%s %s: reading body: %w", c.op, c, err)
	}
	data := buf.Bytes()
	if int64(len(data)) < c.bodyLen {
		return data, false, nil
	}
	if f.kind == kindTruncate {
		return data[:len(data)/2], true, nil
	}
	data[len(data)/2] ^= 0xff
	return data, true, nil
}

// resum recomputes c's checksum over data, so the inner store accepts the corrupted body.
func resum(c store.Checksum, data []byte) store.Checksum {
	if c.IsZero() {
		return c
	}
	var raw []byte
	switch c.Algorithm {
	case store.ChecksumCRC32:
		raw = binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(data))
	case store.ChecksumCRC32C:
		raw = binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	case store.ChecksumCRC64NVME:
		raw = binary.BigEndian.AppendUint64(nil, crc64nvme.Checksum(data))
	case store.ChecksumSHA1:
		d := sha1.Sum(data) //nolint:gosec // see import
		raw = d[:]
	case store.ChecksumSHA256:
		d := sha256.Sum256(data)
		raw = d[:]
	default:
		return store.Checksum{}
	}
	return store.Checksum{Algorithm: c.Algorithm, Value: base64.StdEncoding.EncodeToString(raw)}
}

// lie is what a lying store echoes: the checksum the caller sent, nothing of its own.
func lie(sent store.Checksum, real store.Checksums) store.Checksums {
	var out store.Checksums
	if !sent.IsZero() {
		out.Set(sent.Algorithm, sent.Value)
		out.Type = real.Type
	}
	return out
}

// PutObject implements store.Store.
func (s *Store) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := call{op: OpPutObject, bucket: in.Bucket, key: in.Key, bodyLen: in.ContentLength}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.PutObject(ctx, in)
	}
	switch f.kind {
	case kindDrop:
		_, _ = s.inner.PutObject(ctx, in)
		return nil, lost(c)
	case kindTruncate, kindFlip:
		data, corrupted, err := corrupt(f, c, in.Body)
		if err != nil {
			return nil, err
		}
		mod := *in
		mod.Body = bytes.NewReader(data)
		if corrupted {
			mod.ContentLength, mod.ContentMD5, mod.Checksum = int64(len(data)), "", resum(in.Checksum, data)
		}
		out, err := s.inner.PutObject(ctx, &mod)
		if err != nil || !corrupted {
			return out, err
		}
		o := *out
		o.Checksums = lie(in.Checksum, out.Checksums)
		return &o, nil
	}
	return nil, fail(ctx, f, seq, c, in.Body)
}

// CreateMultipartUpload implements store.Store.
func (s *Store) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := call{op: OpCreateMultipartUpload, bucket: in.Bucket, key: in.Key}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.CreateMultipartUpload(ctx, in)
	}
	if f.kind == kindDrop {
		_, _ = s.inner.CreateMultipartUpload(ctx, in)
		return nil, lost(c)
	}
	return nil, fail(ctx, f, seq, c, nil)
}

// UploadPart implements store.Store.
func (s *Store) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := call{op: OpUploadPart, bucket: in.Bucket, key: in.Key, uploadID: in.UploadID, part: in.PartNumber, bodyLen: in.ContentLength}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.UploadPart(ctx, in)
	}
	switch f.kind {
	case kindDrop:
		_, _ = s.inner.UploadPart(ctx, in)
		return nil, lost(c)
	case kindTruncate, kindFlip:
		data, corrupted, err := corrupt(f, c, in.Body)
		if err != nil {
			return nil, err
		}
		mod := *in
		mod.Body = bytes.NewReader(data)
		if corrupted {
			mod.ContentLength, mod.ContentMD5, mod.Checksum = int64(len(data)), "", resum(in.Checksum, data)
		}
		out, err := s.inner.UploadPart(ctx, &mod)
		if err != nil || !corrupted {
			return out, err
		}
		o := *out
		o.Checksums = lie(in.Checksum, out.Checksums)
		return &o, nil
	}
	return nil, fail(ctx, f, seq, c, in.Body)
}

// ListParts implements store.Store.
func (s *Store) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := call{op: OpListParts, bucket: in.Bucket, key: in.Key, uploadID: in.UploadID}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.ListParts(ctx, in)
	}
	if f.kind == kindDrop {
		_, _ = s.inner.ListParts(ctx, in)
		return nil, lost(c)
	}
	return nil, fail(ctx, f, seq, c, nil)
}

// CompleteMultipartUpload implements store.Store.
func (s *Store) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := call{op: OpCompleteMultipart, bucket: in.Bucket, key: in.Key, uploadID: in.UploadID}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.CompleteMultipartUpload(ctx, in)
	}
	switch f.kind {
	case kindDrop:
		_, _ = s.inner.CompleteMultipartUpload(ctx, in)
		return nil, lost(c)
	case kindGoneAfterCommit:
		out, err := s.inner.CompleteMultipartUpload(ctx, in)
		if err != nil {
			return out, err // the store refused: it would say so, not NoSuchUpload
		}
		return nil, f.responseError(c.op, requestID(seq))
	}
	return nil, fail(ctx, f, seq, c, nil)
}

// AbortMultipartUpload implements store.Store.
func (s *Store) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	if err := store.Validate(in); err != nil {
		return err
	}
	c := call{op: OpAbortMultipart, bucket: in.Bucket, key: in.Key, uploadID: in.UploadID}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.AbortMultipartUpload(ctx, in)
	}
	if f.kind == kindDrop {
		_ = s.inner.AbortMultipartUpload(ctx, in)
		return lost(c)
	}
	return fail(ctx, f, seq, c, nil)
}

// HeadObject implements store.Store.
func (s *Store) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := call{op: OpHeadObject, bucket: in.Bucket, key: in.Key}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.HeadObject(ctx, in)
	}
	if f.kind == kindDrop {
		_, _ = s.inner.HeadObject(ctx, in)
		return nil, lost(c)
	}
	return nil, fail(ctx, f, seq, c, nil)
}

// GetObject implements store.Store.
func (s *Store) GetObject(ctx context.Context, in *store.GetObjectInput) (*store.GetObjectOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := call{op: OpGetObject, bucket: in.Bucket, key: in.Key}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.GetObject(ctx, in)
	}
	if f.kind == kindDrop {
		if out, err := s.inner.GetObject(ctx, in); err == nil && out != nil && out.Body != nil {
			_ = out.Body.Close()
		}
		return nil, lost(c)
	}
	return nil, fail(ctx, f, seq, c, nil)
}

// DeleteObject implements store.Store.
func (s *Store) DeleteObject(ctx context.Context, in *store.DeleteObjectInput) error {
	if err := store.Validate(in); err != nil {
		return err
	}
	c := call{op: OpDeleteObject, bucket: in.Bucket, key: in.Key}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.DeleteObject(ctx, in)
	}
	if f.kind == kindDrop {
		_ = s.inner.DeleteObject(ctx, in)
		return lost(c)
	}
	return fail(ctx, f, seq, c, nil)
}

// ListMultipartUploads implements store.Store. Rules' KeyPrefix is matched against the
// listing's Prefix.
func (s *Store) ListMultipartUploads(ctx context.Context, in *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := call{op: OpListMultipartUploads, bucket: in.Bucket, key: in.Prefix}
	f, seq, ok := s.decide(ctx, c)
	if !ok {
		return s.inner.ListMultipartUploads(ctx, in)
	}
	if f.kind == kindDrop {
		_, _ = s.inner.ListMultipartUploads(ctx, in)
		return nil, lost(c)
	}
	return nil, fail(ctx, f, seq, c, nil)
}

// errNoInner is what a Store built with a nil inner store answers.
var errNoInner = errors.New("faulty: no inner store")

// noStore stands in for a nil inner store.
type noStore struct{}

func (noStore) PutObject(context.Context, *store.PutObjectInput) (*store.PutObjectOutput, error) {
	return nil, errNoInner
}

func (noStore) CreateMultipartUpload(context.Context, *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	return nil, errNoInner
}

func (noStore) UploadPart(context.Context, *store.UploadPartInput) (*store.UploadPartOutput, error) {
	return nil, errNoInner
}

func (noStore) ListParts(context.Context, *store.ListPartsInput) (*store.ListPartsOutput, error) {
	return nil, errNoInner
}

func (noStore) CompleteMultipartUpload(context.Context, *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	return nil, errNoInner
}

func (noStore) AbortMultipartUpload(context.Context, *store.AbortMultipartUploadInput) error {
	return errNoInner
}

func (noStore) HeadObject(context.Context, *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	return nil, errNoInner
}

func (noStore) GetObject(context.Context, *store.GetObjectInput) (*store.GetObjectOutput, error) {
	return nil, errNoInner
}

func (noStore) DeleteObject(context.Context, *store.DeleteObjectInput) error { return errNoInner }

func (noStore) ListMultipartUploads(context.Context, *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	return nil, errNoInner
}
