// Package writer is safeput's uploader. An Uploader, made once per store, owns what its writes
// share (retry policy and budget, memory budget, logger, observer, journal, what they learned
// about the store); its New returns a Writer that streams into an object, its Upload sends a
// reader. Either ends in a verified Result or a classified *errors.Error; never a panic, never a
// multipart upload left behind without saying so. The package functions New, Upload and Recover
// are shorthands for a one-call Uploader.
//
// # How a write flows
//
// One write, as steps. The Writer orchestrates; each step is a type that owns its state, takes
// its inputs as values (a part's bytes as a partBody) and returns a result or a classified
// error (the file that holds each in brackets):
//
//	Write/ReadFrom ─► intake: part buffers from the budget, CRC as bytes land    [intake.go, budget.go]
//	full part ─► uploadSession.create, once; the prober beside it asks, in an    [session.go, probe.go]
//	             upload of its own, aborted, whether the store checks checksums
//	          ─► journalKeeper records the upload id, then each receipt          [journal.go]
//	          ─► partSender.send(n, body, uploadID) ─► partDone or *Error        [parts.go, handoff.go, pacing.go, ahead.go, fence.go]
//	Close ─► one PutObject, or the committer: the Complete made from the         [commit.go, committer.go, optional.go]
//	         receipts, checked against ListParts where they do not prove it
//	      ─► verifier: the commit's answer where it proves the object, else a    [landed.go, evidence.go, encryption.go]
//	         HEAD or a read-back ─► nil (Result filled) or *Error
//	a failure ─► uploadSession.abort, confirmed; a lost create swept             [cleanup.go]
//	a crash ─► resumer continues a journaled upload of the same source           [resume.go, recover.go]
//
// Every step sends through the requester (the retry policy, stall cuts, the counts) [requests.go]
// and names its errors with the errorSite [failures.go]; what to do on each answer is decided
// apart from the I/O [decide_parts.go, decide.go]. Dependencies run one way: Writer → steps →
// requester, errorSite → store.Store. Where a step needs another's act (the verifier aborting
// the upload or deleting a damaged object, the part sender giving a buffer back to the intake),
// the Writer hands it a small interface when it builds the step (uploadHooks, openUpload,
// failer, opLacks), not a closure: the steps are built once per write, and a flush makes many.
package writer
