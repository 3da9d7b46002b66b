package store

// Optional capabilities. A Store may implement any of the interfaces below; the writer looks for
// each with Find, so a store that wraps another (metrics, tracing, fault injection) keeps them all
// by implementing Wrapper, as http.ResponseController finds a ResponseWriter's capabilities
// through its Unwrap method. No other method is looked for on a Store.

// Endpointer is a Store that names the endpoint it sends to (scheme://host[:port]). The writer
// reads it for the provider rules that go by endpoint (multipart.ForEndpoint: R2 takes CRC32C
// only per part), for the endpoint's log field, and for the key of a kept endpoint cache.
type Endpointer interface {
	Endpoint() string
}

// InsecureTLS is a Store that can say whether it skips TLS certificate verification. An
// Uploader whose store reports true logs a warning once, so the choice shows in the logs.
type InsecureTLS interface {
	InsecureSkipVerify() bool
}

// Warmer is a Store that can open connections ahead of requests. As a write begins, the writer
// asks for the n connections its first requests will take to bucket (1 for a single PUT or a
// stream of unknown size; up to the parts in flight for a multipart write of known size), so
// over a wide-area link each connection's handshake overlaps the reading and checksumming of the
// first bytes instead of following them. Warm must not block, and must open nothing it cannot
// use: the adapters open connections only on the transport they built themselves (not over a
// proxy, not on a client the caller passed in), close an unused one after a few seconds, and
// dial nothing when enough connections are already open. A store without it is written to the
// same way.
type Warmer interface {
	Warm(bucket string, n int)
}

// Wrapper is a Store that wraps another: Unwrap returns the store it sends to, so Find reaches
// the capabilities of the store underneath. A wrapper that implements a capability itself is
// found first.
type Wrapper interface {
	Unwrap() Store
}

// maxWraps bounds Find's walk: a chain this deep is a cycle, not a stack of wrappers.
const maxWraps = 64

// Find returns the first store in st's chain of wrappers (st first, then each Unwrap) that
// implements T, e.g. Find[store.Endpointer](st).
func Find[T any](st Store) (T, bool) {
	for range maxWraps {
		if st == nil {
			break
		}
		if t, ok := st.(T); ok {
			return t, true
		}
		w, ok := st.(Wrapper)
		if !ok {
			break
		}
		st = w.Unwrap()
	}
	var zero T
	return zero, false
}
