package writer

import (
	"crypto/md5" //nolint:gosec // the ETag of a part is its MD5
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
)

// committedParts are two parts of "hello world!" (6 bytes each) as the part sender records
// them: their CRC32C, their MD5 and the ETag the store answered.
func committedParts(withMD5 bool) (parts []partDone, whole []byte) {
	whole = []byte("hello world!")
	for i, b := range [][]byte{whole[:6], whole[6:]} {
		p := partDone{number: int32(i + 1), size: int64(len(b)), etag: string(rune('a' + i))}
		p.crc = integrity.ChecksumOf(store.ChecksumCRC32C, b)
		p.sum = integrity.EncodeCRCValue(store.ChecksumCRC32C, p.crc)
		if withMD5 {
			p.md5, p.hasMD5 = md5.Sum(b), true //nolint:gosec // the ETag of a part is its MD5
		}
		parts = append(parts, p)
	}
	return parts, whole
}

// TestCommitterNamesTheObjectThePartsMake: the object a Complete is expected to make has the
// whole source's checksum (combined from the parts', with no pass over the bytes) and, when every
// part has its MD5, the multipart ETag; each completed part carries the checksum sent with it.
func TestCommitterNamesTheObjectThePartsMake(t *testing.T) {
	c := &committer{local: store.ChecksumCRC32C, log: zap.NewNop()}
	parts, whole := committedParts(true)
	pc := c.commitParts(parts, int64(len(whole)), store.ChecksumCRC32C)
	wantSum := integrity.EncodeCRCValue(store.ChecksumCRC32C, integrity.ChecksumOf(store.ChecksumCRC32C, whole))
	if pc.want.Size != int64(len(whole)) || pc.want.Checksum != (store.Checksum{Algorithm: store.ChecksumCRC32C, Value: wantSum}) {
		t.Fatalf("want %+v; the object is %d bytes with CRC32C %s", pc.want, len(whole), wantSum)
	}
	if pc.want.ETag != integrity.MultipartETag([][16]byte{parts[0].md5, parts[1].md5}) {
		t.Fatalf("want ETag %q, not the parts' multipart ETag", pc.want.ETag)
	}
	for i, cp := range pc.completed {
		if cp.PartNumber != parts[i].number || cp.ETag != parts[i].etag || cp.Checksum.Value != parts[i].sum {
			t.Fatalf("completed part %d is %+v; want number, ETag and checksum of %+v", i, cp, parts[i])
		}
	}

	// A part without its MD5: no multipart ETag can be expected; nothing sent, no part checksum.
	parts, whole = committedParts(false)
	parts[0].md5, parts[0].hasMD5 = md5.Sum(whole[:6]), true //nolint:gosec // the ETag of a part is its MD5
	pc = c.commitParts(parts, int64(len(whole)), store.ChecksumNone)
	if pc.want.ETag != "" || !pc.completed[0].Checksum.IsZero() {
		t.Fatalf("want ETag %q, part checksum %+v; want neither without MD5s or a checksum sent", pc.want.ETag, pc.completed[0].Checksum)
	}
}

// TestCommitterNotesAPartListedTwiceOnce: a store listing a part once per attempt passes the
// layout check by the entry that matches the receipt, and the Result says so once, however many
// times the layout is checked again (a re-send re-checks it).
func TestCommitterNotesAPartListedTwiceOnce(t *testing.T) {
	c := &committer{local: store.ChecksumCRC32C, log: zap.NewNop()}
	parts, whole := committedParts(false)
	pc := c.commitParts(parts, int64(len(whole)), store.ChecksumCRC32C)
	listed := []store.Part{
		{PartNumber: 1, Size: 6, ETag: "a"},
		{PartNumber: 2, Size: 6, ETag: "an earlier attempt"},
		{PartNumber: 2, Size: 6, ETag: "b"},
	}
	bad, notes, err := c.checkLayout(pc, listed, "upload")
	if err != nil || len(bad) != 0 {
		t.Fatalf("layout check: bad %v, %v; want it to pass by the entry matching part 2's receipt", bad, err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "part 2 twice") {
		t.Fatalf("notes %q; want one saying part 2 was listed twice", notes)
	}
	if _, again, _ := c.checkLayout(pc, listed, "upload"); len(again) != 0 {
		t.Fatalf("the re-check noted %q again", again)
	}

	// No entry matches the receipt: the part is wrong.
	listed[2].ETag = "another attempt"
	if bad, _, err := c.checkLayout(pc, listed, "upload"); err == nil || len(bad) != 1 || bad[0] != 2 {
		t.Fatalf("bad %v, %v; want part 2 found wrong", bad, err)
	}
}
