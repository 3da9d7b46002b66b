package writer

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
)

// committer is the multipart commit's step: from the parts' receipts it makes what the commit
// names (the parts, their checksums, the object they make), checks that against what the store
// lists, and sends the CompleteMultipartUpload.
//
// It owns the part numbers the store listed more than once, noted once each. It does not own the
// receipts (the session's, handed in as values), nor decide what follows a check or an answer
// (decide.go: afterLayout, afterCommit), nor prove what landed (the HEAD's evidence).
type committer struct {
	st     store.Store
	req    *requester
	bucket string
	key    string
	local  store.ChecksumAlgorithm // the checksum summed for every part: the object's is combined from them
	log    *zap.Logger
	// listedTwice are the part numbers ListParts listed more than once, noted once each.
	listedTwice map[int32]bool
	// answerLost is set when an attempt of the Complete was sent whole and got no answer, so it
	// may have committed: the session's (Result.CommitAnswerLost).
	answerLost *atomic.Bool
}

// partsCommitted is what a Complete of parts names, made from their receipts.
type partsCommitted struct {
	completed []store.CompletedPart
	receipts  []integrity.Receipt // what the layout check compares with ListParts
	etags     map[int32]string    // by part number: the attempt each part's receipt kept
	// want is the object the parts make: its size, its full-object checksum combined from the
	// parts' CRCs (no second pass over the data), its multipart ETag when every part has its MD5.
	want integrity.Expected
}

// commitParts makes what a Complete of parts (in part number order) names; sent is the checksum
// sent with each part ("" when none).
func (c *committer) commitParts(parts []partDone, size int64, sent store.ChecksumAlgorithm) partsCommitted {
	pc := partsCommitted{
		completed: make([]store.CompletedPart, len(parts)),
		receipts:  make([]integrity.Receipt, len(parts)),
		etags:     make(map[int32]string, len(parts)),
		want:      integrity.Expected{Size: size},
	}
	var crc *integrity.CRC
	if c.local != store.ChecksumNone {
		crc, _ = integrity.NewCRC(c.local)
	}
	md5s := make([][16]byte, 0, len(parts))
	for i, p := range parts {
		// The MD5s let the layout check see a part damaged on the way on a store that checks no
		// checksum (its ETags are MD5s of what it got): re-sent or failed before Complete.
		pc.receipts[i] = integrity.Receipt{PartNumber: p.number, Size: p.size, MD5: p.md5, HasMD5: p.hasMD5}
		if crc != nil {
			// Compared with ListParts whenever the store reports that algorithm, sent or not.
			pc.receipts[i].Checksum = store.Checksum{Algorithm: c.local, Value: p.sum}
			crc.Append(p.crc, p.size)
		}
		pc.etags[p.number] = p.etag
		pc.completed[i] = store.CompletedPart{PartNumber: p.number, ETag: p.etag}
		if sent != store.ChecksumNone {
			// Sent for FULL_OBJECT too: some stores (Versity) require every part's checksum.
			pc.completed[i].Checksum = store.Checksum{Algorithm: sent, Value: p.sum}
		}
		if p.hasMD5 {
			md5s = append(md5s, p.md5)
		}
	}
	if crc != nil {
		pc.want.Checksum = store.Checksum{Algorithm: c.local, Value: crc.String()}
	}
	if len(md5s) == len(parts) {
		pc.want.ETag = integrity.MultipartETag(md5s)
	}
	return pc
}

// checkLayout compares what the store listed for the upload with the parts' receipts
// (integrity.CheckLayout): bad are the parts it lost or keeps other than sent. notes are for the
// Result: a part number listed more than once, the first time it is.
func (c *committer) checkLayout(pc partsCommitted, listed []store.Part, uploadID string) (bad []int32, notes []string, err error) {
	notes = c.listedTwiceNotes(listed, pc.etags, uploadID)
	bad, err = integrity.CheckLayout(pc.receipts, pc.etags, listed)
	return bad, notes, err
}

// listedTwiceNotes logs and notes each part number the store listed more than once (one entry
// per attempt of a re-sent part, on some stores). The layout check settles it by the entry
// matching the kept attempt's receipt, and Complete names that attempt's ETag.
func (c *committer) listedTwiceNotes(listed []store.Part, etags map[int32]string, uploadID string) []string {
	count := map[int32]int{}
	for _, p := range listed {
		count[p.PartNumber]++
	}
	var notes []string
	for _, p := range listed {
		n := count[p.PartNumber]
		if n < 2 || c.listedTwice[p.PartNumber] {
			continue
		}
		if c.listedTwice == nil {
			c.listedTwice = map[int32]bool{}
		}
		c.listedTwice[p.PartNumber] = true
		c.log.Warn("the store listed a part more than once (one entry per attempt); the entry matching the kept attempt's receipt decides",
			zap.Int32("part", p.PartNumber), zap.Int("entries", n), zap.String("etag", etags[p.PartNumber]),
			zap.String("upload_id", uploadID))
		notes = append(notes, fmt.Sprintf("the store listed part %d twice (%d entries, one per attempt): only an entry matching the kept attempt's receipt (ETag %s) counts, and Complete names that ETag",
			p.PartNumber, n, etags[p.PartNumber]))
	}
	return notes
}

// complete sends in, retried. Its error is the store's, or marks an answer the caller must judge
// by what is at the key: a conditionRefused when the store refused the If-None-Match header (it
// committed nothing), a lostResponse when the upload is gone (an earlier attempt, or another
// writer, may have committed it).
func (c *committer) complete(in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	var out *store.CompleteMultipartUploadOutput
	err := c.req.doSized("CompleteMultipartUpload", 0, in.ObjectSize, func(ctx context.Context, attempt int) error {
		sendCtx, lostAfterSent := sentWhole(ctx)
		o, err := c.st.CompleteMultipartUpload(sendCtx, in)
		if lostAfterSent(err) {
			c.answerLost.Store(true)
		}
		if err != nil && in.IfNoneMatch && store.Unsupported(err) {
			return &conditionRefused{err: err}
		}
		if err != nil {
			// The upload is gone: an earlier Complete (whose answer was lost, or which the
			// store reports oddly, as MinIO does) may have landed it. Versity answers a re-sent
			// Complete for a finished upload with InvalidPart instead.
			if isNoSuchUpload(err) || (attempt > 1 && hasCode(err, "InvalidPart")) {
				return &lostResponse{err: err, retried: attempt > 1}
			}
			return err
		}
		out = o
		return nil
	})
	return out, err
}
