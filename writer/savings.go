package writer

// Saving names a cost-saving strategy of a write: each spares work (a hash pass, a request,
// page faults) where the store has shown it is safe, and none is needed for correctness. With
// none of them, a write does every check the slow, obvious way: every part's MD5 taken as its
// bytes arrive, no probe, no receipt trusted for its echo, buffers faulted in page by page. The
// test suite runs the core paths both ways and compares what they report.
type Saving uint8

const (
	// SaveLateMD5: a part's or PUT's MD5 is taken after its receipt, while its bytes are still
	// held, and only when the receipt does not prove them; without it every MD5 is taken as the
	// bytes arrive. SaveProbe and SaveEchoTrust act only with it.
	SaveLateMD5 Saving = 1 << iota
	// SaveProbe: the first write to an endpoint not yet known to check part checksums asks, in a
	// multipart upload of its own on the write's key, sent beside the write's create: a tiny part
	// whose checksum is wrong on purpose, then the abort of that upload. A single PUT that is not
	// its Uploader's first asks too (beside it, or after its answer when the checksum header is
	// only offered), for the Uploader's later PUTs, whose answers' echo then proves them; its
	// Close waits for that upload's abort. Nothing of it enters the write's upload or object,
	// Result.Requests or Result.BytesSent. Its requests carry SaveProbe as a context key
	// (ctx.Value(SaveProbe) == true), so a store wrapper (Instrumentation.WrapStore) can tell them
	// from the write's.
	SaveProbe
	// SaveEchoTrust: a receipt that echoes the checksum sent, from a store known to check it,
	// spares its part's MD5.
	SaveEchoTrust
	// SavePrefault: a fresh part buffer's pages (of one of 2 MiB or more) are mapped a step
	// ahead of the bytes read into it instead of faulting one 4 KiB page at a time.
	SavePrefault
	// SaveRereads: the store is not asked again what its checked receipts already said. Where
	// every part of the upload was sent by this write and its receipt echoed the checksum sent,
	// from a store known to check it, the ListParts before Complete is left out: each receipt is
	// the store's checked record of its part, which the listing would only repeat. If Complete's
	// answer then carries the full-object checksum, equal to the one computed here, the HEAD after
	// it is left out too: that answer is the store's own sum of the object it committed, which it
	// checked against the one sent before committing (MinIO and the gateway refuse a wrong one).
	// A single PUT's HEAD is left out when its answer proves the object: its ETag is the MD5 of
	// the body, taken here beside the request (a store names that MD5 only by hashing what it
	// took; a fresh Uploader's first write included, when no Content-MD5 went that a store could
	// answer back, or the profile says the store checks it), or it echoes the checksum sent and
	// the store is known to check it (an earlier multipart write's probe through this Uploader,
	// or the CLI's cache). Result.VerifiedBy then names the request whose answer proved it.
	// A resumed part, a receipt without the echo, a store not known to check, an answer without
	// the checksum (or a PUT's without an MD5 ETag equal to the body's), Options.ReadBack or
	// server-side encryption to confirm still get both requests. A caller who wants the HEAD
	// after every write turns this saving off (Options.Savings &^= SaveRereads); Options.ReadBack
	// (CLI --read-back) reads every object back after its HEAD.
	SaveRereads

	// allSavings is the default.
	allSavings = SaveLateMD5 | SaveProbe | SaveEchoTrust | SavePrefault | SaveRereads
)

func (c *config) saves(s Saving) bool { return c.savings&s != 0 }
