package endpointcache

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// clockAt returns a cache in a fresh directory whose clock reads *now.
func clockAt(t *testing.T, now *time.Time) *Cache {
	t.Helper()
	c := Open(filepath.Join(t.TempDir(), "endpoints"))
	c.now = func() time.Time { return *now }
	return c
}

func TestSaveThenLoad(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := clockAt(t, &now)
	if _, ok := c.Load("k"); ok {
		t.Fatal("an empty cache returned facts")
	}
	c.Save("k", Facts{ChecksParts: true})
	if f, ok := c.Load("k"); !ok || !f.ChecksParts {
		t.Fatalf("Load after Save = %+v, %v; want the echo kept", f, ok)
	}
	if _, ok := c.Load("other"); ok {
		t.Fatal("another key got the facts")
	}
	c.Save("k", Facts{ChecksParts: false})
	if f, ok := c.Load("k"); !ok || f.ChecksParts {
		t.Fatalf("Load after a changed fact = %+v, %v; want the new one", f, ok)
	}
	fi, err := os.Stat(c.dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache directory: %v, %v; want mode 0700 (it names the user's endpoints)", fi, err)
	}
}

// A fact is used for TTL after it was first learned, however often it is seen again since: an
// endpoint replaced behind its URL is learned afresh within a day.
func TestFactsExpireAfterFirstLearned(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := clockAt(t, &now)
	c.Save("k", Facts{ChecksParts: true})
	now = now.Add(TTL - time.Minute)
	c.Save("k", Facts{ChecksParts: true}) // seen again: the learned time stays
	if _, ok := c.Load("k"); !ok {
		t.Fatal("a fact younger than TTL was not used")
	}
	now = now.Add(time.Minute)
	if _, ok := c.Load("k"); ok {
		t.Fatal("a fact learned TTL ago was still used")
	}
	c.Save("k", Facts{ChecksParts: true}) // learned again
	if _, ok := c.Load("k"); !ok {
		t.Fatal("a fact learned afresh was not used")
	}
	now = now.Add(-2 * time.Hour) // a clock set back: the entry is from the future
	if _, ok := c.Load("k"); ok {
		t.Fatal("an entry learned in the future was used")
	}
}

// What cannot be read as an entry for the key is no entry, and a Save replaces it.
func TestUnreadableEntriesAreIgnored(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := clockAt(t, &now)
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"", "{", `{"key":"other","facts":{"receipt_echo":true},"learned":"2026-12-03T12:00:00Z"}`} {
		if err := os.WriteFile(c.path("k"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if f, ok := c.Load("k"); ok {
			t.Fatalf("entry %q gave %+v", body, f)
		}
	}
	c.Save("k", Facts{ChecksParts: true})
	if _, ok := c.Load("k"); !ok {
		t.Fatal("Save did not replace an unreadable entry")
	}
}

// A cache that cannot be written, and no cache at all, keep nothing and fail nothing.
func TestNoCacheKeepsNothing(t *testing.T) {
	var c *Cache
	c.Save("k", Facts{ChecksParts: true})
	if _, ok := c.Load("k"); ok {
		t.Fatal("a nil cache returned facts")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c = Open(filepath.Join(file, "endpoints")) // under a file: never a directory
	c.Save("k", Facts{ChecksParts: true})
	if _, ok := c.Load("k"); ok {
		t.Fatal("an unwritable cache returned facts")
	}
}

// Processes saving at once (goroutines here: each Save is a whole file renamed into place)
// leave one whole entry per key and no temporary file.
func TestConcurrentSaves(t *testing.T) {
	c := Open(filepath.Join(t.TempDir(), "endpoints"))
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				c.Save(fmt.Sprint("k", i%4), Facts{ChecksParts: j%2 == 0})
				c.Load(fmt.Sprint("k", (i+1)%4))
			}
		}()
	}
	wg.Wait()
	for i := range 4 {
		if _, ok := c.Load(fmt.Sprint("k", i)); !ok {
			t.Errorf("k%d: no readable entry after concurrent saves", i)
		}
	}
	names, err := os.ReadDir(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 4 {
		var got []string
		for _, n := range names {
			got = append(got, n.Name())
		}
		t.Fatalf("cache holds %v, want 4 entries and nothing else", got)
	}
}
