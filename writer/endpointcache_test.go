package writer_test

import (
	"path/filepath"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// atEndpoint gives a store the endpoint an endpoint cache keys its facts by.
type atEndpoint struct {
	store.Store
	url string
}

func (s atEndpoint) Endpoint() string { return s.url }

// cachedUploader is a fresh Uploader (a new process, as the CLI makes one per write) that keeps
// its endpoint facts in c.
func cachedUploader(t *testing.T, st store.Store, dir string) *writer.Uploader {
	t.Helper()
	return newUploader(t, st, func(o *writer.Options) { o.EndpointCache = dir })
}

// probesSent runs write and returns how many UploadPart requests it sent beyond a 12 MiB
// object's three 5 MiB parts: the checksum probe's (probe.go, in its own upload), if it was sent.
func probesSent(t *testing.T, mem *memstore.Store, write func()) int {
	t.Helper()
	before := mem.Requests("UploadPart")
	write()
	return mem.Requests("UploadPart") - before - 3
}

// TestEndpointCacheCarriesTheEcho: with an endpoint cache (the CLI's), what one process learned
// about an endpoint (its checksum probe refused, its receipts echoing) spares the next process
// the probe and its MD5s, and nothing else changes: a store that stopped echoing still gets every
// MD5, one whose HEAD stopped reporting the checksum still gets its read-back, and every write
// ends strongly verified.
func TestEndpointCacheCarriesTheEcho(t *testing.T) {
	large, small := randomBytes(t, largeSize), randomBytes(t, smallSize)
	const url = "http://127.0.0.1:9000"

	t.Run("echoes", func(t *testing.T) {
		c := filepath.Join(t.TempDir(), "endpoints")
		mem := newMem(minioLike)
		st := atEndpoint{mem, url}
		var (
			res    *writer.Result
			hashed int64
			err    error
		)
		if n := probesSent(t, mem, func() { res, hashed, err = writeCounting(t, cachedUploader(t, st, c), "first", large) }); n != 1 {
			t.Fatalf("the first process sent %d probes, want 1", n)
		}
		mustLand(t, mem, "first", large, res, err, verify.MethodCRC32C)
		if hashed != 0 {
			t.Fatalf("first process hashed %d bytes by MD5, want none (the store refused the probe)", hashed)
		}
		if n := probesSent(t, mem, func() { res, hashed, err = writeCounting(t, cachedUploader(t, st, c), "second", large) }); n != 0 {
			t.Fatalf("the second process sent %d probes, want none (the cache says the store checks)", n)
		}
		mustLand(t, mem, "second", large, res, err, verify.MethodCRC32C)
		if hashed != 0 {
			t.Fatalf("second process hashed %d bytes by MD5, want none", hashed)
		}
		res, hashed, err = writeCounting(t, cachedUploader(t, st, c), "single", small)
		mustLand(t, mem, "single", small, res, err, verify.MethodCRC32C)
		if hashed != 0 {
			t.Fatalf("a later process's single PUT hashed %d bytes by MD5, want none", hashed)
		}
		// Without the cache, or at another endpoint, a process probes afresh; and its single
		// PUT, which sends no probe, takes its MD5.
		if n := probesSent(t, mem, func() { _, _, _ = writeCounting(t, newUploader(t, st), "uncached", large) }); n != 1 {
			t.Fatalf("a process without the cache sent %d probes, want 1", n)
		}
		if n := probesSent(t, mem, func() {
			_, _, _ = writeCounting(t, cachedUploader(t, atEndpoint{mem, "http://127.0.0.1:9001"}, c), "elsewhere", large)
		}); n != 1 {
			t.Fatalf("a process at another endpoint sent %d probes, want 1", n)
		}
		_, hashed, _ = writeCounting(t, cachedUploader(t, atEndpoint{mem, "http://127.0.0.1:9002"}, c), "single-elsewhere", small)
		if hashed != smallSize {
			t.Fatalf("a first single PUT at an unknown endpoint hashed %d bytes, want %d", hashed, smallSize)
		}
	})

	t.Run("behind a wrapper", func(t *testing.T) {
		// The endpoint is found through the wrapper's Unwrap: the second process is spared the
		// probe as without the wrapper.
		c := filepath.Join(t.TempDir(), "endpoints")
		mem := newMem(minioLike)
		st := unwrapping{atEndpoint{mem, url}}
		if n := probesSent(t, mem, func() { _, _, _ = writeCounting(t, cachedUploader(t, st, c), "first", large) }); n != 1 {
			t.Fatalf("the first process sent %d probes, want 1", n)
		}
		if n := probesSent(t, mem, func() { _, _, _ = writeCounting(t, cachedUploader(t, st, c), "second", large) }); n != 0 {
			t.Fatalf("the second process sent %d probes, want 0: the cache was not found through the wrapper", n)
		}
	})

	t.Run("the store behind the endpoint stopped echoing", func(t *testing.T) {
		c := filepath.Join(t.TempDir(), "endpoints")
		echoing := newMem(minioLike)
		if _, _, err := writeCounting(t, cachedUploader(t, atEndpoint{echoing, url}, c), "learn", large); err != nil {
			t.Fatal(err)
		}
		mem := newMem(cephLike) // replaced behind the same URL: the cache still says it checks
		res, hashed, err := writeCounting(t, cachedUploader(t, atEndpoint{mem, url}, c), "k", large)
		mustLand(t, mem, "k", large, res, err, verify.MethodETagMD5)
		if hashed != largeSize {
			t.Fatalf("hashed %d bytes by MD5, want all %d (no receipt echoed)", hashed, largeSize)
		}
		// The cache now says receipts do not echo: the next process trusts no echo.
		_, hashed, _ = writeCounting(t, cachedUploader(t, atEndpoint{echoing, url}, c), "after", large)
		if hashed != largeSize {
			t.Fatalf("after a receipt without the echo, the next process hashed %d bytes, want all %d", hashed, largeSize)
		}
	})

	t.Run("the HEAD stopped reporting the checksum", func(t *testing.T) {
		c := filepath.Join(t.TempDir(), "endpoints")
		mem := newMem(minioLike)
		if _, _, err := writeCounting(t, cachedUploader(t, atEndpoint{mem, url}, c), "learn", large); err != nil {
			t.Fatal(err)
		}
		// No part was hashed and the HEAD proves nothing: the object is read back, whatever
		// its size against the read-back limit.
		u := cachedUploader(t, atEndpoint{headWithoutChecksums{mem}, url}, c)
		res, hashed, err := writeCounting(t, u, "k", large, func(o *writer.Options) { o.ReadBackLimit = mib })
		mustLand(t, mem, "k", large, res, err, verify.MethodReadBack)
		if hashed != 0 {
			t.Fatalf("hashed %d bytes by MD5, want none", hashed)
		}
	})
}
