//go:build unix

package journal

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow and openNonBlock: a journal file is never reached through a symbolic link, and
// opening one never waits (a FIFO's open blocks until a writer appears; with O_NONBLOCK it
// returns at once and the fstat that follows refuses it).
const (
	openNoFollow = syscall.O_NOFOLLOW
	openNonBlock = syscall.O_NONBLOCK
)

// dirSafe enforces who may change the journal: records decide which uploads are aborted and the
// process follows them with its own rights, so nobody but the process's user may plant, replace
// or remove one.
func dirSafe(path string, fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		mode := uint32(perm)
		if fi.Mode()&fs.ModeSticky != 0 {
			mode |= 0o1000
		}
		return fmt.Errorf("journal %s: the directory is group- or world-writable (mode %04o): another user could plant or replace records; a journal directory must be writable by its owner only (chmod go-w)",
			path, mode)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int64(st.Uid) != int64(euid) {
		return fmt.Errorf("journal %s: the directory is owned by uid %d, not by this process's user (uid %d): a journal directory must belong to the user that runs safeput",
			path, st.Uid, euid)
	}
	return nil
}

// preOpenCheck: O_NOFOLLOW and the fstat after the open do the checking here.
func preOpenCheck(string) error { return nil }
