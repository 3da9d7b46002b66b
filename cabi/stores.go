package cabi

import (
	"slices"
	"sync"

	"github.com/safeput/safeput/internal/frontend"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/faulty"
)

// Handles share one store (one SDK client and its connection pool) per connection, as a Go
// program keeps one client: a store per handle left its connections idle for the transport's
// 90 s after every close, so a process flushing a few files a second held hundreds of sockets
// and could run out of descriptors.
var stores = storeCache{max: 8}

// connKey is a connection after resolution: the credentials in it, so a handle given other
// keys (or the environment's, rotated) gets its own client.
type connKey struct {
	frontend.Resolved
	backend             string
	pathStyle, insecure bool
}

// storeCache keeps the stores of the most recently used connections; one it drops is kept by
// its open handles until they end, and its idle connections close on the transport's timeout.
type storeCache struct {
	mu   sync.Mutex
	max  int
	keys []connKey // least recently used first
	st   map[connKey]store.Store
}

// get returns the shared store for c, wrapped by faults (tests only) for this handle alone.
func (sc *storeCache) get(c frontend.Conn, faults []faulty.Rule) (store.Store, error) {
	if err := c.CheckBackend(); err != nil {
		return nil, err
	}
	r, err := c.Resolve()
	if err != nil {
		return nil, err
	}
	k := connKey{Resolved: r, backend: c.Backend, pathStyle: c.PathStyle, insecure: c.InsecureSkipVerify}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st, ok := sc.st[k]
	if ok {
		sc.keys = slices.DeleteFunc(sc.keys, func(o connKey) bool { return o == k })
	} else {
		if st, err = frontend.NewResolvedStore(c, r); err != nil {
			return nil, err
		}
		if sc.st == nil {
			sc.st = map[connKey]store.Store{}
		}
		sc.st[k] = st
		if len(sc.keys) >= sc.max {
			delete(sc.st, sc.keys[0])
			sc.keys = sc.keys[1:]
		}
	}
	sc.keys = append(sc.keys, k)
	if len(faults) > 0 {
		return faulty.New(st, faults...), nil
	}
	return st, nil
}
