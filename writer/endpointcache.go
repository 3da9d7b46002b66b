package writer

import (
	"fmt"

	"github.com/safeput/safeput/internal/endpointcache"
	"github.com/safeput/safeput/store"
)

// attachEndpointCache starts u's facts from the cache in dir, keyed by the adapter and endpoint:
// the fact is the store's answer as that SDK reads it.
func (u *Uploader) attachEndpointCache(dir string) {
	e, ok := store.Find[store.Endpointer](u.st)
	if dir == "" || !ok || e.Endpoint() == "" {
		return
	}
	u.facts.cache, u.facts.cacheID = endpointcache.Open(dir), fmt.Sprintf("%T %s", e, e.Endpoint())
}

// fromCache starts f from what the cache kept for key (called before f is shared).
func (f *endpointFacts) fromCache(c *endpointcache.Cache, key string) {
	f.save = func(kept endpointcache.Facts) { c.Save(key, kept) }
	if kept, ok := c.Load(key); ok {
		// Only whether the store checks part checksums is kept: of what a write learns, it alone
		// spares work (the probe, and the MD5s of parts whose receipts echo) while leaving every
		// check in place, because a receipt without the echo still gets its MD5 and a HEAD that
		// then reports no checksum still leads to a read-back (readBackAllowed).
		f.checksParts = no
		if kept.ChecksParts {
			f.checksParts = yes
		}
		f.cached = f.checksParts
	}
}

// keep saves what the probe showed when it differs from what the cache held.
func (f *endpointFacts) keep() {
	f.mu.Lock()
	checks, save := f.checksParts, f.save
	changed := save != nil && checks != unknown && checks != f.cached
	if changed {
		f.cached = checks
	}
	f.mu.Unlock()
	if changed {
		save(endpointcache.Facts{ChecksParts: checks == yes})
	}
}
