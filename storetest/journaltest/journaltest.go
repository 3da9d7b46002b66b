// Package journaltest lets tests outside the library's module read and seed the upload journal
// that writer.Options.JournalDir keeps (one JSON record per upload, claimed with an flock): a crash test
// checks what a killed process left, a recovery test plants the record a crash would have left.
//
// Test support, outside safeput's compatibility promise (see package storetest).
package journaltest

import "github.com/safeput/safeput/internal/journal"

// The journal's types, as the writer records them.
type (
	Dir    = journal.Dir
	ID     = journal.ID
	Record = journal.Record
	Object = journal.Object
	Part   = journal.Part
)

// Open returns the journal in path, an existing directory.
func Open(path string) (*Dir, error) { return journal.Open(path) }
