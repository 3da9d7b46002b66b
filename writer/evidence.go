package writer

import (
	stderrors "errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/endpointcache"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// Evidence on stores the profile does not know. A write must end strongly verified (or, with
// Options.AllowWeakVerification, say it did not). Cheapest first:
//  1. a checksum header: when the profile sends none, the write offers the CRC anyway and learns
//     from the answer whether the store takes it (a refusal costs one retry, then is remembered
//     by the Uploader), then whether HEAD reports it;
//  2. the ETag against the body's MD5 (single PUT) or MD5-of-part-MD5s-N (multipart), computed
//     in the part goroutines only when the write may need it: while it is not known whether the
//     HEAD reports the checksum, a body's MD5 is taken after its receipt, from the bytes still
//     held, unless the receipt echoes the checksum sent on an endpoint known to check it
//     (lateMD5; the probe of probe.go asks, in an upload of its own);
//     a single PUT's MD5 is taken beside its request unless its answer's echo may prove it
//     (md5Early), so its answer's ETag can stand for the HEAD (etagProves); else when its HEAD
//     needs it (lateETag);
//  3. reading the object back, for replayable sources or objects up to the read-back limit, or
//     of any size when parts went without MD5s and the HEAD then reported no checksum (once per
//     Uploader and bucket: the endpoint's facts then say so).
// What a bucket of the store showed is kept by the Uploader (uploader.go), so its later writes
// skip what cannot help.

// tri is an unknown / yes / no fact about an endpoint.
type tri uint8

const (
	unknown tri = iota
	yes
	no
)

// endpointFacts is what an Uploader's writes learned about one bucket of its store.
type endpointFacts struct {
	// reached: a request to this store got its answer. Until then a store that takes no request
	// may never have been there (a wrong endpoint, a store not started), so its requests are
	// first contacts (retry.Op.FirstContact) and get no outage allowance; after, a refused or
	// reset connection is an outage to ride out.
	reached        atomic.Bool
	mu             sync.Mutex
	headerRejected bool // the store refused an x-amz-checksum-* header we offered
	headChecksum   tri  // HEAD reported the full-object checksum we sent
	etagMD5        tri  // a single-PUT ETag is the body's MD5
	mpETagMD5      tri  // a multipart ETag is MD5-of-part-MD5s-N
	// putAnswerMD5: a single PUT's answer carried the MD5 of its body as its ETag (etagProves),
	// so a later PUT answered with another MD5-shaped ETag was damaged on the way. Kept apart
	// from etagMD5, which also has every later write hash its parts (chooseChecksum): a PUT's
	// answer shows nothing of whether the HEAD reports the checksum that would spare them.
	putAnswerMD5 bool
	// checksParts: a part sent with a wrong checksum was refused as a mismatch (probe.go), and
	// no receipt since lacked the echo of the checksum sent (yes); or one of those was not so (no).
	checksParts tri
	// asking is closed when the probe out for this endpoint has its answer, nil when none is out;
	// probed: one was sent (probe.go).
	asking chan struct{}
	probed bool
	// lacks holds the store's "not supported" answer to each optional operation it lacks
	// (optional.go).
	lacks map[string]error
	// save keeps checksParts for later processes (endpointcache.go); cached is what it holds.
	save   func(endpointcache.Facts)
	cached tri
}

// storeAnswered records that a request got err from the store: success, or an answer of the store
// itself (not a balancer's 502, 503 or 504 with nothing behind it).
func (f *endpointFacts) storeAnswered(err error) {
	if f.reached.Load() {
		return
	}
	var re *store.ResponseError
	if err == nil || (stderrors.As(err, &re) && re.StatusCode > 0 && re.StatusCode != 502 && re.StatusCode != 503 && re.StatusCode != 504) {
		f.reached.Store(true)
	}
}

// requestTaken records that a request was written out whole to the store: something there took
// it, so the endpoint is a store's, and a later failure to reach it is an outage to ride out, not
// a wrong endpoint (its answer, even if lost, may have been carried out).
func (f *endpointFacts) requestTaken() { f.reached.Store(true) }

// firstContact reports whether no request to this store has been answered yet.
func (f *endpointFacts) firstContact() bool { return !f.reached.Load() }

// checking reports whether this endpoint is known to check the checksums of the parts it takes.
func (f *endpointFacts) checking() tri {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checksParts
}

func (f *endpointFacts) get() (headerRejected bool, headChecksum, etagMD5, mpETagMD5 tri) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headerRejected, f.headChecksum, f.etagMD5, f.mpETagMD5
}

func (f *endpointFacts) update(fn func(*endpointFacts)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// chooseChecksum decides what this write sends and computes, from the algorithm asked for, the
// store's rules and what its endpoint showed before.
func chooseChecksum(cfg config, f *endpointFacts) checksumCaps {
	c := checksumCaps{etagIsMD5: cfg.rules.SinglePutETagMD5, mpETagMD5: cfg.rules.MultipartETagMD5, md5: cfg.contentMD5, local: cfg.checksum}
	if etagsMayNotBeMD5(cfg.sse) {
		// Only what this endpoint showed for such writes (f is kept per encryption) counts.
		c.etagIsMD5, c.mpETagMD5 = false, false
	}
	rejected, headChecksum, etagMD5, mpETagMD5 := f.get()
	c.etagIsMD5 = c.etagIsMD5 || etagMD5 == yes
	c.mpETagMD5 = c.mpETagMD5 || mpETagMD5 == yes
	headKnown := false
	if types := cfg.rules.Checksums.Types(cfg.checksum); cfg.checksum != store.ChecksumNone && types != 0 {
		c.alg = cfg.checksum
		c.fullObject = types.Has(multipart.FullObject)
		headKnown = cfg.rules.HeadChecksums
	} else if integrity.IsCRC(cfg.checksum) && !rejected {
		// The profile does not say the store takes it: offer it; a refusal is retried without.
		c.alg, c.fullObject, c.probing = cfg.checksum, true, true
	}
	if c.alg != store.ChecksumNone && headChecksum == yes {
		headKnown = true
	}
	switch {
	case headKnown:
	case c.alg != store.ChecksumNone && headChecksum == unknown && !c.etagIsMD5 && !c.mpETagMD5:
		// Whether the HEAD reports the checksum is not known yet. A store known to check it
		// (probe.go) that echoes it on a receipt took the bytes as sent (MinIO, the gateway, AWS
		// do, and their HEAD reports it): those bytes need no MD5. Any other receipt gets its
		// MD5 while the bytes are held.
		// (Where ETags are known MD5s, the MD5 checks every receipt apart from the echo: kept.)
		// Without the saving, every MD5 is taken as the bytes arrive.
		c.md5Late = cfg.saves(SaveLateMD5)
		c.md5 = c.md5 || !c.md5Late
	default:
		// The stored checksum does not come back: MD5 ETags are the next proof.
		c.md5 = true
	}
	// A store that does not check the checksum header (none listed in its profile: Ceph RGW 16.2
	// ignores them) but checks Content-MD5 gets Content-MD5, so a body damaged on the way is
	// refused instead of stored.
	c.sendMD5 = cfg.contentMD5 || (cfg.rules.ContentMD5 && cfg.rules.Checksums.Types(cfg.checksum) == 0)
	if c.sendMD5 {
		c.md5, c.md5Late = true, false
	}
	return c
}

// headerRefused reports whether err is a store's refusal of a request that carried a checksum
// header we only offered: a 400, 405 or 501 that is neither a digest mismatch nor an auth problem.
func headerRefused(err error) bool {
	var re *store.ResponseError
	if !stderrors.As(err, &re) || (re.StatusCode != 400 && !store.Unsupported(err)) {
		return false
	}
	switch sperrors.Classify(err).Kind {
	case sperrors.Compatibility, sperrors.Permanent:
		return true
	}
	return false
}

// dropOfferedChecksum is called when the store refused the checksum header this write offered:
// the endpoint is remembered as refusing it and the write goes on without one.
func (v *verifier) dropOfferedChecksum(op string, err error) {
	v.facts.update(func(f *endpointFacts) { f.headerRejected = true })
	v.caps.alg, v.caps.fullObject, v.caps.probing = store.ChecksumNone, false, false
	v.caps.md5, v.caps.md5Late = true, false
	v.notes.add(fmt.Sprintf("the store refused the %s checksum header on %s; sent without it", v.cfg.checksum, op))
	v.log.Info("store refused the offered checksum header: retrying without it", zap.String("op", op),
		zap.String("checksum", string(v.cfg.checksum)), zap.Error(err))
}

// etagTrusted reports whether a differing ETag proves a different object on this store.
func (c *checksumCaps) etagTrusted(multipart bool) bool {
	if multipart {
		return c.mpETagMD5
	}
	return c.etagIsMD5
}

// putReceiptTrusted reports whether a single PUT's answer whose MD5-shaped ETag differs from
// the body's MD5 proves the body was damaged on the way: where ETags are known MD5s, or an
// earlier unencrypted PUT's answer here carried its MD5 (putAnswerMD5; an SSE-S3 write shares
// those facts, and its ETag may be made otherwise).
func (v *verifier) putReceiptTrusted() bool {
	if v.caps.etagTrusted(false) {
		return true
	}
	if v.cfg.sse.Type != "" {
		return false
	}
	v.facts.mu.Lock()
	defer v.facts.mu.Unlock()
	return v.facts.putAnswerMD5
}

// judgement is the outcome of gathering evidence about the object at the key.
type judgement struct {
	method   verify.Method
	by       string   // the request whose answer gave the evidence (Result.VerifiedBy)
	mismatch error    // proves a different object
	missing  []string // why nothing strong could be said
}

// judge gathers evidence after a HEAD: the HEAD's own, then a read-back when allowed. It also
// teaches the endpoint's facts what this HEAD showed.
func (v *verifier) judge(want integrity.Expected, head *store.HeadObjectOutput, multipart bool) judgement {
	ev := integrity.Assess(want, head, v.caps.etagTrusted(multipart))
	if !ev.Strong() && ev.Mismatch == nil && want.ETag == "" && v.lateETag != nil {
		// The checksum did not decide it and the body's MD5 was left for this moment: the
		// single PUT's bytes are still held.
		want.ETag = v.lateETag()
		ev = integrity.Assess(want, head, v.caps.etagTrusted(multipart))
	}
	v.learn(ev, multipart)
	switch v.decider().afterHead(ev, v.readBackAllowed(want.Size)) {
	case evidenceMismatch:
		return judgement{mismatch: ev.Mismatch}
	case evidenceEnough:
		return judgement{method: ev.Method, by: "HeadObject"}
	case evidenceShort:
		missing := append(ev.Missing, fmt.Sprintf("read-back not attempted (the object is over the %d-byte read-back limit and the source cannot be replayed)", v.cfg.readBackLimit))
		return judgement{method: ev.Method, by: "HeadObject", missing: missing}
	}
	method, err := v.readBack(want)
	if err != nil {
		var mm *integrity.Mismatch
		if stderrors.As(err, &mm) {
			return judgement{mismatch: err}
		}
		return judgement{method: ev.Method, by: "HeadObject", missing: append(ev.Missing, "read-back failed: "+err.Error())}
	}
	if !method.Strong() {
		return judgement{method: ev.Method, by: "HeadObject", missing: append(ev.Missing, "read-back had no checksum to compare")}
	}
	return judgement{method: method, by: "GetObject"}
}

// learn records what a HEAD showed about the endpoint: whether it reports the checksum we
// sent, and whether its ETags are MD5s.
func (v *verifier) learn(ev integrity.Evidence, multipart bool) {
	if ev.Mismatch != nil {
		return
	}
	sent := v.caps.alg != store.ChecksumNone
	v.facts.update(func(f *endpointFacts) {
		if sent && ev.ChecksumReported {
			f.headChecksum = yes
		} else if sent && f.headChecksum == unknown {
			f.headChecksum = no
		}
		etag := &f.etagMD5
		if multipart {
			etag = &f.mpETagMD5
		}
		switch {
		case ev.ETagMatched:
			*etag = yes
		case ev.ETagDiffered && ev.Method.Strong() && ev.Method != verify.MethodETagMD5:
			// The checksum proved the object; the ETag is something other than an MD5.
			*etag = no
		}
	})
	if ev.ETagMatched {
		if multipart {
			v.caps.mpETagMD5 = true
		} else {
			v.caps.etagIsMD5 = true
		}
	}
}

// readBackAllowed reports whether the object may be read back when nothing else proved it: past
// the read-back limit too when parts went without their MD5 on the expectation that the HEAD
// would report the checksum (caps.md5Late) and it did not: the price of that expectation, paid
// once per Uploader and bucket (the endpoint's facts then say so, and later writes compute MD5s).
func (v *verifier) readBackAllowed(size int64) bool {
	return v.cfg.readBack || v.cfg.replayable || (v.cfg.readBackLimit > 0 && (size <= v.cfg.readBackLimit || v.md5Skipped.Load()))
}

// unverifiable is the error of a landed object nothing could prove (verdictUnproven and
// verdictUnprovenLeft): Integrity, coded Unverifiable, saying what evidence was missing.
func (v *verifier) unverifiable(j judgement) *sperrors.Error {
	e := v.errs.errorf(sperrors.Integrity, "Verify", nil, "the object landed but its content could not be proven: %s", strings.Join(j.missing, "; "))
	e.Code = sperrors.CodeUnverifiable
	return e
}

// isUnverifiable reports the error of a write nothing could prove: retrying cannot help.
func isUnverifiable(err error) bool {
	e := asError(err)
	return e != nil && e.Code == sperrors.CodeUnverifiable
}
