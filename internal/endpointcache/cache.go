// Package endpointcache keeps what a process learned about an endpoint for the next process: the
// CLI makes one write per run, so without it every run re-learns the store (and pays for the
// evidence it computes while it does). One small file per endpoint and bucket, replaced whole by
// rename, so processes running at once never see half a file; the last one to finish wins, which
// costs a cache at most a re-learned fact.
//
// What is kept is only ever a hint that saves work: a wrong or stale entry makes a write compute
// or read more, never accept less (package writer decides what a fact may spare).
package endpointcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// TTL is how long a fact is used after it was learned: an endpoint can be upgraded or replaced
// behind the same URL, so each fact is learned afresh at least once a day.
const TTL = 24 * time.Hour

// Cache is a directory of entries. The zero value and a nil *Cache keep nothing.
type Cache struct {
	dir string
	now func() time.Time
}

// Open returns a cache in dir (created, 0700, on the first save).
func Open(dir string) *Cache { return &Cache{dir: dir, now: time.Now} }

// Facts is what is kept for one key.
type Facts struct {
	// ChecksParts: the store refused a part sent with a wrong checksum as a digest mismatch
	// (true), or took it (false).
	ChecksParts bool `json:"checks_parts"`
}

type entry struct {
	Key     string    `json:"key"`
	Facts   Facts     `json:"facts"`
	Learned time.Time `json:"learned"`
}

// schema names what Facts hold: entries an older build wrote are not read as today's facts.
const schema = "checks-parts/1 "

func (c *Cache) path(key string) string {
	sum := sha256.Sum256([]byte(schema + key))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json")
}

// Load returns the facts kept for key when they were learned less than TTL ago.
func (c *Cache) Load(key string) (Facts, bool) {
	e, ok := c.load(key)
	return e.Facts, ok
}

func (c *Cache) load(key string) (entry, bool) {
	if c == nil || c.dir == "" {
		return entry{}, false
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		return entry{}, false
	}
	var e entry
	// The key is kept in the file too: two keys that hash alike never share facts.
	if json.Unmarshal(b, &e) != nil || e.Key != key {
		return entry{}, false
	}
	if age := c.now().Sub(e.Learned); age < 0 || age >= TTL {
		return entry{}, false
	}
	return e, true
}

// Save keeps f for key. Facts equal to those already kept keep their learned time, so a fact
// expires TTL after it was first learned however often it is seen again. A cache that cannot be
// written is not an error: the next run learns again.
func (c *Cache) Save(key string, f Facts) {
	if c == nil || c.dir == "" {
		return
	}
	if old, ok := c.load(key); ok && old.Facts == f {
		return
	}
	b, err := json.Marshal(entry{Key: key, Facts: f, Learned: c.now().UTC()})
	if err != nil {
		return
	}
	if os.MkdirAll(c.dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, ".entry-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), c.path(key)) != nil {
		_ = os.Remove(tmp.Name())
	}
}
