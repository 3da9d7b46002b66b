// Package secrets is the process-wide set of secret values errors.Redact blanks wherever they
// appear, whatever surrounds them: a store that echoes a request's headers into its error
// message puts the session token or the SSE-C key into a message that no pattern can recognise
// by shape (a bare value, a header spelt its own way). The values are registered where the
// process learns them: the adapters register the keys they sign with and the SSE-C keys they
// send, at construction and as renewed keys arrive.
package secrets

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MinLen is the shortest value registered: a shorter one ("us-east-1", "true", a short test
// password) would blank ordinary text wherever it happens to occur.
const MinLen = 8

// maxValues bounds the set. Keys that rotate (an assumed role's, renewed every hour or so) add
// values for as long as the process runs; past the bound the least recently registered go
// first, which are the expired ones: values in use are registered again as they are used.
const maxValues = 256

// Marker replaces every registered value.
const Marker = "REDACTED"

// set is one immutable generation of the registry; Register replaces it as a whole.
type set struct {
	// seq is each value's registration sequence number; next is the one the next value gets.
	seq  map[string]uint64
	next uint64
	// replacer blanks every value, the longest first where several start at one place.
	replacer *strings.Replacer
}

var (
	current atomic.Pointer[set]
	mu      sync.Mutex // serialises Register's copy-on-write
)

// fresh reports whether s holds v recently enough not to be evicted soon: a value in use is
// registered again on each use, and only re-ordered once half the bound has passed it, so the
// common call (a value already known) takes no lock and allocates nothing.
func (s *set) fresh(v string) bool {
	n, ok := s.seq[v]
	return ok && s.next-n < maxValues/2
}

// Register adds the values to the set. Values shorter than MinLen are ignored. A value's
// query-escaped form is registered with it, as a URL would print it.
func Register(values ...string) {
	s := current.Load()
	if s != nil {
		known := true
		for _, v := range values {
			if len(v) >= MinLen && !s.fresh(v) {
				known = false
				break
			}
		}
		if known {
			return
		}
	}
	mu.Lock()
	defer mu.Unlock()
	old := current.Load()
	next := &set{seq: map[string]uint64{}}
	if old != nil {
		for v, n := range old.seq {
			next.seq[v] = n
		}
		next.next = old.next
	}
	add := func(v string) {
		next.seq[v] = next.next
		next.next++
	}
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		add(v)
		if q := url.QueryEscape(v); q != v {
			add(q)
		}
	}
	if len(next.seq) > maxValues {
		byAge := make([]string, 0, len(next.seq))
		for v := range next.seq {
			byAge = append(byAge, v)
		}
		slices.SortFunc(byAge, func(a, b string) int { return cmp.Compare(next.seq[a], next.seq[b]) })
		for _, v := range byAge[:len(byAge)-maxValues] {
			delete(next.seq, v)
		}
	}
	// Longest first: strings.Replacer tries its pairs in order at each position, so a value that
	// contains another is blanked whole.
	vals := make([]string, 0, len(next.seq))
	for v := range next.seq {
		vals = append(vals, v)
	}
	slices.SortFunc(vals, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, Marker)
	}
	next.replacer = strings.NewReplacer(pairs...)
	current.Store(next)
}

// Replace returns s with every registered value replaced by Marker.
func Replace(s string) string {
	cur := current.Load()
	if cur == nil || s == "" {
		return s
	}
	return cur.replacer.Replace(s)
}
