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
		// Only the echo is kept: of what a write learns, it alone spares work (the MD5s of
		// parts whose receipts echo) while leaving every check in place, because a receipt
		// without the echo still gets its MD5 and a HEAD that then reports no checksum still
		// leads to a read-back (readBackAllowed).
		f.receiptEcho = no
		if kept.ReceiptEcho {
			f.receiptEcho = yes
		}
		f.cached = f.receiptEcho
	}
}

// keep saves what the endpoint's receipts showed when it differs from what the cache held.
func (f *endpointFacts) keep() {
	f.mu.Lock()
	echo, save := f.receiptEcho, f.save
	changed := save != nil && echo != unknown && echo != f.cached
	if changed {
		f.cached = echo
	}
	f.mu.Unlock()
	if changed {
		save(endpointcache.Facts{ReceiptEcho: echo == yes})
	}
}
