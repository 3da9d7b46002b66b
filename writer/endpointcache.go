package writer

import (
	"fmt"

	"github.com/safeput/safeput/internal/endpointcache"
)

func init() {
	endpointcache.Attach = func(u any, c *endpointcache.Cache) {
		up, ok := u.(*Uploader)
		if !ok || up == nil || c == nil {
			return
		}
		e, ok := up.st.(interface{ Endpoint() string })
		if !ok || e.Endpoint() == "" {
			return
		}
		up.facts.mu.Lock()
		defer up.facts.mu.Unlock()
		// The adapter is part of the key: the fact is the store's answer as that SDK reads it.
		up.facts.cache, up.facts.cacheID = c, fmt.Sprintf("%T %s", up.st, e.Endpoint())
	}
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
