package writer

import (
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
)

// warmConnections asks st, as a write of plan to bucket begins, for the connections its first
// requests will take: over a wide-area link each new connection's handshake is a round trip,
// which then overlaps the reading and checksumming of the first bytes and, for a multipart
// write, the CreateMultipartUpload the parts wait for, instead of following them. A client whose
// connections are already open dials nothing. probes says whether the write sends the checksum
// probe beside its create (decider.probes), asked only of a multipart write.
func warmConnections(st store.Store, bucket string, plan multipart.Plan, concurrency int, probes func() bool) {
	wm, ok := store.Find[store.Warmer](st)
	if !ok {
		return
	}
	n := 1 // a single PUT (then its HEAD), a stream of unknown size, or the create
	if !plan.Single && plan.Parts > 1 {
		n = min(concurrency, plan.Parts) // the create's connection carries a part after it
		if probes() {
			// The probe's create goes beside the write's (probe.go): without a connection of its
			// own it takes one the parts would, and the part left over pays a handshake, a round
			// trip late (the WAN relay's trace shows it: bash scripts/bench.sh -wan-trace).
			n++
		}
	}
	wm.Warm(bucket, n)
}
