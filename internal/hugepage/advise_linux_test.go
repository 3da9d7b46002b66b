package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func TestHugeRange(t *testing.T) {
	const mib = 1 << 20
	base := uintptr(64 * hugePage) // aligned
	for _, tc := range []struct {
		name           string
		start          uintptr
		n              int
		wantFrom, want uintptr
	}{
		{"aligned 16 MiB: all but the first 2 MiB", base, 16 * mib, 2 * mib, 16 * mib},
		{"unaligned 16 MiB: the whole pages past 2 MiB", base + 4096, 16 * mib, 4*mib - 4096, 16*mib - 4096},
		{"unaligned by a MiB", base + mib, 16 * mib, 3 * mib, 15 * mib},
		{"4 MiB aligned: one page", base, 4 * mib, 2 * mib, 4 * mib},
		{"4 MiB unaligned: none whole past 2 MiB", base + 4096, 4 * mib, 0, 0},
		{"under 2 MiB: none", base, 2*mib - 1, 0, 0},
		{"small: none", base, 4096, 0, 0},
		{"empty", base, 0, 0, 0},
	} {
		from, to := hugeRange(tc.start, tc.n)
		if from != tc.wantFrom || to != tc.want {
			t.Errorf("%s: hugeRange = [%d, %d), want [%d, %d)", tc.name, from, to, tc.wantFrom, tc.want)
		}
		if from != to && ((tc.start+from)%hugePage != 0 || (tc.start+to)%hugePage != 0 || to > uintptr(tc.n) || from < 2*mib) {
			t.Errorf("%s: [%d, %d) is not whole aligned pages past the first 2 MiB", tc.name, from, to)
		}
	}
}

// What a user of a THP kernel would check: the buffer's pages past its first 2 MiB carry the
// huge-page advice (VmFlags "hg" in /proc/self/smaps) once advised, and none before.
func TestAdviseMarksTheBuffer(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	t.Setenv("GODEBUG", "")
	buf := freshMapping(t)
	from, to := hugeRange(uintptr(unsafe.Pointer(&buf[0])), len(buf))
	at := uintptr(unsafe.Pointer(&buf[from]))
	if advised(t, at) {
		t.Fatalf("advice on a buffer never advised")
	}
	Advise(buf)
	if !advised(t, at) || !advised(t, uintptr(unsafe.Pointer(&buf[to-1]))) {
		t.Fatalf("no huge-page advice on [%#x, %#x) after Advise", at, uintptr(unsafe.Pointer(&buf[0]))+to)
	}
	if from > 0 && advised(t, uintptr(unsafe.Pointer(&buf[0]))) {
		t.Errorf("the buffer's first 2 MiB were advised too")
	}
}

func TestAdviseHonoursDisableTHP(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	t.Setenv("GODEBUG", "madvdontneed=1,disablethp=1")
	buf := freshMapping(t)
	from, _ := hugeRange(uintptr(unsafe.Pointer(&buf[0])), len(buf))
	Advise(buf)
	if advised(t, uintptr(unsafe.Pointer(&buf[from]))) {
		t.Fatal("Advise advised a buffer under GODEBUG=disablethp=1")
	}
}

// freshMapping is 16 MiB of memory in a mapping of its own: advice is kept per mapping, and the
// Go heap's may carry another test's.
func freshMapping(t *testing.T) []byte {
	t.Helper()
	buf, err := syscall.Mmap(-1, 0, 16<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(buf) })
	return buf
}

// advised reports whether the mapping holding addr has VM_HUGEPAGE set.
func advised(t *testing.T, addr uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line[:strings.IndexByte(line, ' ')], "-") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Contains(" "+line[len("VmFlags:"):]+" ", " hg ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping holds %#x", addr)
	return false
}
