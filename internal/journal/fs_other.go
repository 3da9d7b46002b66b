//go:build !unix

package journal

import (
	"io/fs"
	"os"
)

// Without O_NOFOLLOW the reads check the entry with Lstat first (racy, but the journal's claims
// work on unix systems only anyway); without O_NONBLOCK nothing blocks on a FIFO there.
const (
	openNoFollow = 0
	openNonBlock = 0
)

// dirSafe: the mode bits and owner of a directory mean nothing portable here.
func dirSafe(string, fs.FileInfo) error { return nil }

// preOpenCheck refuses a path that is not a regular file before it is opened.
func preOpenCheck(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil // the open reports a missing file
	}
	return notRegular(fi.Mode())
}
