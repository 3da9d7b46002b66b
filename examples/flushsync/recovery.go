package flushsync

import (
	"context"

	"github.com/safeput/safeput/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// Recovery makes a Manager settle, before its first task runs, every multipart upload a
// previous process left in the journal when it died mid-flush: an upload whose Complete landed
// is recognised as landed, any other is aborted, so a restart neither leaves billed orphans
// behind nor has to guess. Tasks record their uploads by passing
// writer.WithJournal(Journal, Endpoint) in SegmentTask.Options.
type Recovery struct {
	Store    store.Store
	Journal  journal.Journal
	Endpoint string
	// Options tunes the run (policy, logger); Endpoint is taken from the field above.
	Options writer.RecoverOptions
}

// recoverJournal runs at NewManager: recovery first, then the workers, so a task re-writing a
// key never races the abort of that key's dead upload.
func (m *Manager) recoverJournal(ctx context.Context) {
	r := m.cfg.Recovery
	if r == nil {
		return
	}
	opts := r.Options
	opts.Endpoint = r.Endpoint
	m.recovered, m.recoverErr = writer.Recover(ctx, r.Store, r.Journal, opts)
}

// Recovered returns what the start-up recovery did (nil without Config.Recovery) and the error
// when the journal could not be read. Per-upload failures are in the report (RecoverFailed):
// those uploads are kept in the journal for the next start.
func (m *Manager) Recovered() (*writer.RecoverReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recovered, m.recoverErr
}
