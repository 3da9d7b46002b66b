package cabi

import (
	"slices"
	"sync"

	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// Handles share one Uploader (one store, so one SDK client and its connection pool; one retry
// budget; what writes learned about the store) per connection, as a Go program keeps one: a store
// per handle left its connections idle for the transport's 90 s after every close, so a process
// flushing a few files a second held hundreds of sockets and could run out of descriptors.
var stores = storeCache{max: 8}

// connKey is a connection after resolution: the credentials in it, so a handle given other
// keys (or the environment's, rotated) gets its own client.
type connKey struct {
	frontend.Resolved
	backend             string
	pathStyle, insecure bool
}

// conn is what the handles of one connection share.
type conn struct {
	up *writer.Uploader
	st store.Store
	// policy is up's retry policy: a handle with its own stall window derives its policy from
	// it, keeping the retry budget shared.
	policy *retry.Policy
}

// storeCache keeps the Uploaders of the most recently used connections; one it drops is kept by
// its open handles until they end, and its idle connections close on the transport's timeout.
type storeCache struct {
	mu   sync.Mutex
	max  int
	keys []connKey // least recently used first
	conn map[connKey]*conn
}

// get returns the shared connection for c; with withFaults (tests only: testFaults), a connection
// of its own whose store it wraps, for this handle alone.
func (sc *storeCache) get(c frontend.Conn, withFaults func(store.Store) store.Store) (*conn, error) {
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
	cn, ok := sc.conn[k]
	if ok {
		sc.keys = slices.DeleteFunc(sc.keys, func(o connKey) bool { return o == k })
	} else {
		st, err := frontend.NewResolvedStore(c, r)
		if err != nil {
			return nil, err
		}
		if cn, err = newConn(st, retry.New()); err != nil {
			return nil, err
		}
		if sc.conn == nil {
			sc.conn = map[connKey]*conn{}
		}
		sc.conn[k] = cn
		if len(sc.keys) >= sc.max {
			delete(sc.conn, sc.keys[0])
			sc.keys = sc.keys[1:]
		}
	}
	sc.keys = append(sc.keys, k)
	if withFaults != nil {
		return newConn(withFaults(cn.st), cn.policy)
	}
	return cn, nil
}

func newConn(st store.Store, p *retry.Policy) (*conn, error) {
	up, err := writer.NewUploader(st, func(o *writer.Options) { o.Retry = p })
	if err != nil {
		return nil, err
	}
	return &conn{up: up, st: st, policy: p}, nil
}
