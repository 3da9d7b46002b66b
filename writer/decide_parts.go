package writer

import (
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s; compared, not for security.
	"encoding/hex"

	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
)

// The decisions of one write before its commit, apart from the I/O that carries them out: how the
// object goes (one PutObject or a multipart upload, buffers or sections of a ReaderAt source),
// how big each part is and which one is final, what the held bytes become at Close, whether a
// part's MD5 is taken now, later or not at all, and whether the checksum probe is sent. As in
// decide.go, none sends a request, takes a lock or logs, so each is tested by table
// (decide_test.go); intake.go, parts.go, commit.go, upload.go and probe.go execute the step
// returned.

// sendsSections decides whether Upload sends its parts straight from an io.ReaderAt source of
// known size (readerAt) rather than reading it into part buffers: only when the object is larger
// than the single-PUT threshold; a small one goes as one PutObject, also read from the source.
func sendsSections(readerAt bool, size, threshold int64) bool {
	return readerAt && size > threshold
}

// closingShape is how the object goes to the store once Close has it all.
type closingShape uint8

const (
	closeSinglePut closingShape = iota // one PutObject of the one buffer that holds the object (or of the small ReaderAt source)
	closeMultipart                     // the held bytes go as the final part(s), then ListParts and Complete
)

// atClose decides how the object goes at Close: as one PutObject when no multipart upload was
// started, the parts do not come from a ReaderAt source (fromSource: its parts went already) and
// the size is within the threshold (at most one buffer: newWriter caps it at the part size; a
// small ReaderAt source, which Upload sends from itself, has none);
// else as a multipart upload, which a part already sent has begun.
func atClose(fromSource, uploadStarted bool, size, threshold int64) closingShape {
	if !fromSource && !uploadStarted && size <= threshold {
		return closeSinglePut
	}
	return closeMultipart
}

// tailStep is what a multipart write's held buffers become at Close.
type tailStep uint8

const (
	tailNone            tailStep = iota // nothing held: every part went already
	tailDropEmpty                       // only a fresh buffer with nothing in it: released, nothing sent
	tailPendingFinal                    // the held full part is the last: it goes as the final part (an empty buffer after it released)
	tailFillFinal                       // the partly filled buffer goes as the final part
	tailPendingThenFill                 // the held full part goes, then the partly filled buffer as the final part
)

// closingTail decides what the held bytes of a buffered multipart write become at Close, from
// what is held: a buffer being filled (hasBuf, with fill bytes in it) and a full part held back
// (hasPending) until more data showed it is not the last. Only the last part sent is final, and
// an empty buffer is never sent: a part of zero bytes would change the object's layout.
func closingTail(hasBuf bool, fill int, hasPending bool) tailStep {
	switch {
	case hasBuf && fill > 0 && hasPending:
		return tailPendingThenFill
	case hasBuf && fill > 0:
		return tailFillFinal
	case hasPending:
		return tailPendingFinal
	case hasBuf:
		return tailDropEmpty
	default:
		return tailNone
	}
}

// declaredAllIn reports whether a write of declared size sizeHint (-1: none declared) has all its
// bytes in (written): a byte more is then the source being longer than declared, said so rather
// than left to fail as a part the plan has no room for.
func declaredAllIn(sizeHint, written int64) bool {
	return sizeHint >= 0 && written >= sizeHint
}

// partBufferSize decides the size of the next part buffer a stream takes: a whole part, or, for
// a write of declared size sizeHint with written bytes in, only what remains of the object (a
// known small object needs only its own size; at least one byte, so a buffer is never empty).
func partBufferSize(partSize, sizeHint, written int64) int64 {
	if sizeHint < 0 {
		return partSize
	}
	return max(1, min(partSize, sizeHint-written))
}

// sectionSpan decides the part of a ReaderAt source of total bytes that starts at off: its size
// (a whole part, or what is left) and whether it is the final part.
func sectionSpan(off, total, partSize int64) (size int64, final bool) {
	size = min(partSize, total-off)
	return size, off+size == total
}

// md5Step is what a part's or single PUT's MD5 needs once its receipt is in.
type md5Step uint8

const (
	md5Held    md5Step = iota // taken already, or this write takes none
	md5Take                   // take it now, from the bytes still held
	md5AskEcho                // the receipt's echo may spare it: wait for the probe's answer, then afterEcho decides
)

// afterReceipt decides on a receipt's MD5: hasMD5, whether it was taken already (as the bytes
// arrived, or beside the request); sent, the checksum the request carried. A write that defers
// its MD5s (md5Late) lets an echo of a checksum it sent decide; one that wants every MD5
// (md5Upfront: a single PUT whose offered checksum header was refused after its MD5 was skipped)
// takes it now.
func (d decider) afterReceipt(hasMD5 bool, sent store.Checksum) md5Step {
	switch {
	case hasMD5 || (!d.md5Late && !d.md5Upfront):
		return md5Held
	case d.md5Late && !sent.IsZero():
		return md5AskEcho
	default:
		return md5Take
	}
}

// echoStep is what a receipt's echo of the checksum sent decides about the MD5 of its bytes.
type echoStep uint8

const (
	echoTrusted   echoStep = iota // the store took the bytes as sent: no MD5
	echoUntrusted                 // take the MD5: the echo alone proves nothing
	echoMissing                   // take the MD5; the endpoint's receipts do not echo, so they can spare none (checksParts = no)
)

// afterEcho decides on the value echoed for the checksum sent (sent.Algorithm; "" when the
// receipt carries none) from an endpoint whose checking of part checksums is checking (the
// probe's answer). The MD5 is skipped only when the echo matches, the endpoint is known to check
// (a store that checks nothing may parrot the header) and echo trust is a saving this write
// uses; a receipt without the echo makes the endpoint's receipts useless for this.
func (d decider) afterEcho(sent store.Checksum, echoed string, checking tri) echoStep {
	switch {
	case echoed == sent.Value && checking == yes && d.echoTrust:
		return echoTrusted
	case echoed == "":
		return echoMissing
	default:
		return echoUntrusted
	}
}

// md5Early decides whether a single PUT's MD5 is taken beside its request (md5Beside: from its
// buffer, or from a ReaderAt source read again), while its bytes are on the wire, rather than
// after its answer: when it has not been taken (hasMD5) and
// the answer cannot prove the bytes without it, since the endpoint is not known to check
// checksums (checking); then the write needs it either way: a write that defers its MD5s
// (md5Late) for its HEAD, any other for its answer's ETag (etagProves), unless that answer
// cannot stand for the HEAD or the endpoint's ETags were shown not to be MD5s. A write that took
// no MD5 and cannot use one (its HEAD reports the checksum, and the HEAD is sent anyway) takes none.
func (d decider) md5Early(hasMD5 bool, checking tri) bool {
	if hasMD5 || checking == yes {
		return false
	}
	return d.md5Late || (d.answerMayStand() && !d.etagsNotMD5)
}

// md5Spared reports that a part acknowledged without its MD5 (hasMD5) went without it because
// its receipt's echo was trusted: if the HEAD then reports no checksum, only a read-back can
// prove the object (verifier.md5Skipped).
func (d decider) md5Spared(hasMD5 bool) bool {
	return !hasMD5 && d.md5Late
}

// probes decides whether this write sends the checksum probe (probe.go), in an upload of its own
// beside its create: only when it defers its MD5s and may (SaveProbe), sends a checksum the probe
// can get wrong, and the endpoint's checking is not known yet (checking).
func (d decider) probes(checking tri) bool {
	return d.md5Late && d.probeSaving && d.checksumSent && checking == unknown
}

// probesBesidePut decides whether a single PUT sends the checksum probe (probe.go) beside its
// request, so that the Uploader's later single PUTs may be proven by the checksum their answers
// echo and take no MD5 (putProves): only when such a PUT could then go without its MD5 (none is
// taken up front: not for Content-MD5, nor for a HEAD the endpoint is known to need it for), its
// answer may stand for the HEAD (answerMayStand: not with server-side encryption, whose ETags
// and applied encryption only the HEAD settles), the savings the probe serves are on, a
// checksum the probe can get wrong goes with it, the endpoint's checking is not known yet, and
// the write is not its Uploader's first. The first may be the only one (a package shorthand's, a
// process's one object, an Uploader made per write): the write waits for the probe's create, part
// and abort, a few round trips after its own answer, for what serves only later writes. The PUT
// itself keeps its MD5: the answer comes after its own.
func (d decider) probesBesidePut(checking tri) bool {
	return !d.md5Upfront && d.answerMayStand() && d.probeSaving && d.echoTrust && d.lateSaving &&
		d.checksumSent && checking == unknown && d.laterWrite
}

// probeAnswer is what the probe's answer err shows about the endpoint: taken, it checks nothing
// (no); refused as a digest mismatch, it checks (yes: the answer asked for, not a failure);
// anything else (a throttle, a 5xx, a lost answer, a refusal of the credentials) says nothing.
func probeAnswer(err error) tri {
	switch {
	case err == nil:
		return no
	case hasCode(err, "BadDigest") || hasCode(err, "XAmzContentChecksumMismatch"):
		return yes
	default:
		return unknown
	}
}

// createsAtStart decides whether a stream creates its multipart upload as it begins rather than
// when its first part is full: only when its declared size (sizeHint, -1 for none) is over the
// single-PUT threshold, so it is multipart whatever comes. A stream of unknown size may yet fit
// one PutObject, and must not pay for an upload it may not use. (A ReaderAt source sends its
// create first anyway.)
func createsAtStart(sizeHint, threshold int64) bool {
	return sizeHint >= 0 && sizeHint > threshold
}

// listsBeforeComplete decides whether the parts are listed (ListParts) and checked against what
// was sent before Complete. The listing is left out (SaveRereads) only when it would add
// nothing: a checksum went with every part, the endpoint is known to check it (checking), and
// every part's receipt in this write echoed it (a resumed part has no receipt here). A store
// that checks took each such part as sent, or refused it.
func (d decider) listsBeforeComplete(parts []partDone, checking tri) bool {
	if !d.rereadSaving || !d.checksumSent || checking != yes || len(parts) == 0 {
		return true
	}
	for _, p := range parts {
		if !p.echoed {
			return true
		}
	}
	return false
}

// completeProves decides whether Complete's answer stands for the HEAD after commit
// (SaveRereads). Only after a Complete that went without the listing because every receipt
// proved its part (unlisted), and only when the answer carries the full-object checksum of the
// algorithm computed here (want), equal to it, and an ETag for the Result: the store's own sum of what it committed, which
// a store that checks refuses to commit against a different one sent. What else a HEAD shows
// keeps it: the encryption the store applied, when some was asked for, and Options.ReadBack,
// which reads the object whatever proved it.
func (d decider) completeProves(answer store.Checksums, etag string, want store.Checksum) bool {
	if etag == "" || !d.unlisted || !d.answerMayStand() || want.Value == "" {
		return false
	}
	return answer.Get(want.Algorithm) == want.Value
}

// answerMayStand reports whether a commit's answer may stand for the HEAD after it at all: the
// saving is on (SaveRereads), and nothing only a HEAD or a read shows was asked for: the
// encryption the store applied, Options.ReadBack.
func (d decider) answerMayStand() bool {
	return d.rereadSaving && !d.encrypted && !d.readBack
}

// putProves decides whether a single PUT's answer stands for the HEAD after it (SaveRereads) by
// the checksum it echoes: when the endpoint is known to check checksums (checking: the probe of
// an earlier multipart write through this Uploader, or the CLI's cached answer) and the answer
// echoes the checksum sent, which is the object's (want), with an ETag for the Result. Such a
// store refuses a body that does not match the checksum sent (BadDigest,
// XAmzContentChecksumMismatch) and stores nothing, so its acceptance is its checked record of
// the object, which the HEAD would only repeat. Elsewhere the ETag may prove it (etagProves).
func (d decider) putProves(answer store.Checksums, etag string, sent, want store.Checksum, checking tri) bool {
	if etag == "" || checking != yes || !d.answerMayStand() || want.Value == "" || sent != want {
		return false
	}
	return answer.Get(sent.Algorithm) == sent.Value
}

// etagProves decides whether a single PUT's answer stands for the HEAD after it (SaveRereads) by
// its ETag, on any endpoint, a fresh Uploader's first write included: when the ETag is the hex
// MD5 of the body computed here (sum, when hasMD5). A store names that MD5 only by hashing the
// bytes it took, so a body cut or damaged on the way gets another ETag; the HEAD would report
// the same ETag. That holds only while nothing sent tells the store the MD5: with Content-MD5
// sent (md5Sent) a store that checks nothing could answer it back as its ETag, so then only a
// store known to check Content-MD5 (checksMD5: its profile says so) counts, since it refuses a
// body that does not match. An ETag that is not an MD5 (SSE-KMS, SSE-C, stores that make their
// own), or differs, proves nothing here: the HEAD and its judgement decide.
func (d decider) etagProves(etag string, sum [md5.Size]byte, hasMD5, md5Sent, checksMD5 bool) bool {
	if !hasMD5 || !d.answerMayStand() || (md5Sent && !checksMD5) {
		return false
	}
	e, ok := integrity.ParseETag(etag)
	return ok && e.IsMD5() && e.Hex == hex.EncodeToString(sum[:])
}
