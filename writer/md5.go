package writer

import (
	"crypto/md5" //nolint:gosec // Content-MD5 and S3 ETags are MD5; not for security.
	"encoding/base64"
	"hash"
)

type md5Hasher = hash.Hash

func newMD5() md5Hasher { return md5.New() } //nolint:gosec // see import

func md5Header(d [md5.Size]byte) string { return base64.StdEncoding.EncodeToString(d[:]) }

// earlyMD5 is a single PUT body's MD5 taken beside the request that sends it. When the store's answer
// cannot prove the bytes by itself (the endpoint's checking is not known yet), the MD5 is needed
// right after that answer, and over a wide-area link hashing then would add its time (about
// 11 ms for 8 MiB here) between the answer and the HEAD; taken while the bytes are on the wire,
// it is ready when the answer comes.
type earlyMD5 struct {
	done chan struct{}
	sum  [md5.Size]byte
	err  error // a source read again for its MD5 could not be, or had changed
}

// startMD5 takes the MD5 that take returns beside the request (partSender.md5Beside). take must
// not panic (a caller's ReaderAt may: take recovers it into its error).
func startMD5(take func() ([md5.Size]byte, error)) *earlyMD5 {
	e := &earlyMD5{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.sum, e.err = take()
	}()
	return e
}

// wait returns the sum once taken. The caller must wait before it gives the buffer back, or
// before the write returns when the sum is read from the caller's source.
func (e *earlyMD5) wait() [md5.Size]byte {
	<-e.done
	return e.sum
}

// result is wait with the error of a source that could not be read again.
func (e *earlyMD5) result() ([md5.Size]byte, error) {
	<-e.done
	return e.sum, e.err
}
