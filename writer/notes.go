package writer

import "sync"

// notes gathers what the store did that the caller should know, for Result.Notes. Every step
// may add one (a part, the commit, the checks, the abort), from any goroutine; the write's
// Result takes them all when it lands. It owns nothing else.
type notes struct {
	mu   sync.Mutex
	list []string
}

// add records one note.
func (n *notes) add(s string) {
	n.mu.Lock()
	n.list = append(n.list, s)
	n.mu.Unlock()
}

// all returns a copy of the notes so far.
func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.list...)
}
