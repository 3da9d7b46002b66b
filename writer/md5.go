package writer

import (
	"crypto/md5" //nolint:gosec // Content-MD5 and S3 ETags are MD5; not for security.
	"encoding/base64"
	"hash"
)

type md5Hasher = hash.Hash

func newMD5() md5Hasher { return md5.New() } //nolint:gosec // see import

func md5Header(d [md5.Size]byte) string { return base64.StdEncoding.EncodeToString(d[:]) }
