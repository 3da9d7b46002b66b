//go:build !unix

package journal

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// lockFile: without flock the claim protects nothing across processes; refuse rather than
// pretend (the journal is supported on unix systems).
func lockFile(*os.File) error { return errors.New("journal locking is supported on unix systems only") }
