package writer

import (
	"bytes"
	"context"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/probe"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// A receipt that echoes the checksum sent spares its part's MD5 only on a store known to check
// that checksum: an echo alone proves nothing (a store or middlebox may parrot the header), and a
// part damaged on the way to a store that checks nothing is caught before Complete only by its
// MD5. So the first write that would defer its MD5s to an endpoint not yet known sends, in its own
// upload and beside its first parts, a tiny part 1 whose checksum is wrong on purpose:
//   - refused as a digest mismatch (BadDigest, MinIO's XAmzContentChecksumMismatch): the store
//     checks the checksums of parts, so a part it took with the checksum echoed arrived as sent;
//   - taken: it checks nothing, and every part gets its MD5. The write's own part 1, sent after
//     the probe's answer, replaces it (a part no Complete names is refused by Ceph RGW, so the
//     probe cannot take a number the write may not use), and a store that lists every attempt
//     of a part has its entry left out of the layout check (unlistedProbe);
//   - refused as Permanent with 403 (AccessDenied, a key the store no longer knows): an answer to
//     the write's credentials, not to the probe's checksum, so the write fails with it as its own
//     part 1 would (a retry of the write's parts must not hide it);
//   - anything else (a throttle, a 5xx, a lost answer): not known, and this write hashes every
//     part. The probe is sent once whatever the answer: it is evidence, not a step the write
//     needs, so it adds one request and never a retry allowance to the write's bound.
// One request per Uploader, bucket and encryption, or per day for the CLI (endpointcache.go).

// probeBody is the probe's body; it is sent with a well-formed checksum of other bytes.
var probeBody = []byte("safeput: does this store check part checksums?")

// probePart is the part number the probe uses: the write's first, always sent after it.
const probePart = 1

// startProbe sends the probe in the background when this write defers its MD5s and the endpoint
// is not yet known to check. It goes beside the first parts instead of before them, so it adds
// no round trip to the write's path, and every receipt is judged knowing the answer
// (awaitProbe). The write's own part 1 must replace the probe's, so be stored after it: a part 1
// from a buffer waits for the probe's answer; one from an io.ReaderAt source goes beside it,
// and is sent again once the answer is in unless the probe was refused as a mismatch, which
// stores nothing (probeRaced). On a store that checks, that saves part 1 a round trip; on one
// that checks nothing, the first write costs one part sent twice instead.
func (w *Writer) startProbe(uploadID string) {
	if !w.decider().probes(w.facts.checking()) {
		return
	}
	done := make(chan struct{})
	w.mu.Lock()
	w.probed = done
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(done)
		defer w.recoverTo("UploadPart", probePart)
		_ = w.probe(uploadID)
	}()
}

// probeRaced reports, after waiting for the probe's answer, whether a part 1 sent before that
// answer (sentEarly) may have been stored before the probe's part, and so must be sent again:
// unless the probe was refused as a mismatch. A probe that failed otherwise (a lost answer, a
// throttle) may have stored its part, so the answer counts as no.
func (w *Writer) probeRaced(sentEarly bool) bool {
	if !sentEarly {
		return false
	}
	w.awaitProbe()
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.probeRefused
}

// probeAnswered reports whether no probe is pending: none was sent, or its answer is in.
func (w *Writer) probeAnswered() bool {
	w.mu.Lock()
	done := w.probed
	w.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// awaitProbe waits for the probe's answer, if one was sent, or for the write's end.
func (w *Writer) awaitProbe() {
	w.mu.Lock()
	done := w.probed
	w.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-w.ctx.Done():
	}
}

// probe sends the probe, once (bounded as every attempt is), and records what the answer shows.
// Its error is the write's, made sticky here: an auth refusal (refusedAccess), which the write's
// own parts would meet too.
func (w *Writer) probe(uploadID string) error {
	wrong, err := integrity.Sum(w.caps.alg, append([]byte("not "), probeBody...))
	if err != nil {
		return nil //nolint:nilerr // an algorithm the probe cannot sum: nothing asked, the parts hash every byte
	}
	var verdict tri
	var answer error
	// One attempt of any kind: MaxAttempts alone still allows a throttled request its own
	// retries and allowance, which put a whole throttle allowance before the parts' own.
	stats, probeErr := w.policy.With(sendOnce).Do(probe.Mark(w.ctx), retry.Op{Name: "UploadPart", Bucket: w.bucket, Key: w.key, UploadID: uploadID, PartNumber: probePart, Size: int64(len(probeBody))},
		func(ctx context.Context, _ int) error {
			_, err := w.st.UploadPart(ctx, &store.UploadPartInput{
				Bucket: w.bucket, Key: w.key, UploadID: uploadID, PartNumber: probePart,
				Body: bytes.NewReader(probeBody), ContentLength: int64(len(probeBody)),
				Checksum: store.Checksum{Algorithm: w.caps.alg, Value: wrong}, SSECustomerKey: w.customerKey(),
			})
			answer = err
			if verdict = probeAnswer(err); verdict == yes {
				return nil // the answer asked for: not a failure of the write
			}
			return err
		})
	// Counted as a request; a refusal that shows the store checks is not a failure.
	w.mu.Lock()
	w.stats.Add(stats)
	w.mu.Unlock()
	w.bytesSent.Add(int64(len(probeBody)))
	w.mu.Lock()
	w.probeRefused = verdict == yes
	w.mu.Unlock()
	w.facts.update(func(f *endpointFacts) {
		// A receipt without the echo, seen meanwhile by another write, still decides.
		if f.checksParts == unknown {
			f.checksParts = verdict
		}
	})
	w.log.Debug("probed whether the store checks part checksums", zap.String("upload_id", uploadID), zap.Int32("part", probePart),
		zap.Int64("size", int64(len(probeBody))), zap.Int("attempt", 1), zap.String("checksum", string(w.caps.alg)),
		zap.Bool("checks", verdict == yes), zap.Bool("known", verdict != unknown), zap.NamedError("answer", answer))
	if refusedAccess(probeErr) {
		return w.fail(probeErr)
	}
	return nil
}

// refusedAccess: a Permanent 403, the store refusing the write's credentials or rights
// (AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, ...), whatever request it answered.
func refusedAccess(err error) bool {
	e := asError(err)
	return e != nil && e.Kind == sperrors.Permanent && e.StatusCode == 403
}

// unlistedProbe drops from a ListParts listing the probe's entry that a store listing every
// attempt of a part keeps beside the write's own part 1: its size, and not the ETag the write's
// part 1 got.
func (w *Writer) unlistedProbe(listed []store.Part, sent map[int32]string) []store.Part {
	kept := listed[:0:0]
	for _, p := range listed {
		if p.PartNumber == probePart && p.Size == int64(len(probeBody)) && trimQuotes(p.ETag) != trimQuotes(sent[probePart]) {
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// sendOnce makes a policy send its request once, whatever the answer: throttled or refused too
// (the probe).
func sendOnce(o *retry.Options) { o.MaxAttempts, o.ThrottleMaxAttempts, o.OutageMaxElapsed = 1, 1, 0 }
