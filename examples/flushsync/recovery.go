package flushsync

import (
	"context"

	"github.com/safeput/safeput/writer"
)

// Recovery makes a Manager settle, before its first task runs, every multipart upload a
// previous process left in the journal when it died mid-flush: an upload whose Complete landed
// is recognised as landed, any other is aborted, so a restart neither leaves billed orphans
// behind nor has to guess. Tasks record their uploads through an Uploader made with
// writer.Options.JournalDir; Recovery takes an Uploader of the same journal (the tasks' own, typically).
type Recovery struct {
	Uploader *writer.Uploader // made Options.JournalDir
	// Options tunes the run; unset fields take the Uploader's (endpoint, policy, logger).
	Options writer.RecoverOptions
}

// recoverJournal runs at NewManager: recovery first, then the workers, so a task re-writing a
// key never races the abort of that key's dead upload.
func (m *Manager) recoverJournal(ctx context.Context) {
	r := m.cfg.Recovery
	if r == nil {
		return
	}
	m.recovered, m.recoverErr = r.Uploader.Recover(ctx, r.Options)
}

// Recovered returns what the start-up recovery did (nil without Config.Recovery) and the error
// when the journal could not be read. Per-upload failures are in the report (RecoverFailed):
// those uploads are kept in the journal for the next start.
func (m *Manager) Recovered() (*writer.RecoverReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recovered, m.recoverErr
}
