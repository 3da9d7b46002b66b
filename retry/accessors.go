package retry

// IntegrityRetries returns the policy's cap on retries after Integrity failures; the writer
// uses the same cap for whole-upload retries of a replayable source.
func (p *Policy) IntegrityRetries() int {
	if p == nil {
		return newPolicy().IntegrityRetries()
	}
	p.init()
	return p.cfg.integrityRetries
}
