package writer

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// The parts of an io.ReaderAt source hold no buffer, so how many go at once is bound by the link,
// not by memory. A TCP connection moves at most its window per round trip: a far store needs more
// parts in flight than a near one to fill the same link (the bandwidth-delay product over one
// connection's window), and neither the window nor the link's rate is known in advance. So such a
// write measures. Each time as many parts were acknowledged as were allowed in flight (an epoch),
// it takes the epoch's rate and widens by half while the rate grows at least a quarter as fast as
// the parts in flight did, up to maxWidening × Options.Concurrency; once a widening buys too
// little (the link is full), it stops. A quarter, not a half: the epoch that measures a widening
// also pays its new connections' handshakes, and each part's answer idles its connection for a
// round trip, so on a link far from full half more parts raise the measured rate by well under
// half, and a half threshold stops the widening while the link still has room. BENCHMARKS.md's
// "Over a far link" (a 200 ms link, a 4 MiB window per connection, 1 Gbit/s shared; `WAN_ONLY=1
// WAN_FAR=1 WAN_RTT=200ms WAN_SIZES="64MiB 512MiB" bash scripts/bench.sh`) shows the connections
// a write from a file widens to and its time against the peers, which keep their parts in flight
// fixed. TestWideningOver200msLink shows the widening at a smaller scale.
//
// Widening needs a far store (the answered create took farStore or more: on a cold connection,
// the handshake and the request, two round trips; a retried create's backoff does not count)
// and Concurrency above 1 (one means one at a time). The create's time includes the server's,
// so a slow server near by (Ceph RGW over TLS, at times) passes the gate too: its write widens
// once, without a rate to compare, and further only where the rate grows. A stream's parts are
// buffers, bounded by memory: it keeps Concurrency. The part size stays the plan's. A connection
// moves its window per round trip, so a part of P bytes takes about P/window round trips and then
// waits one for its answer: the share of its time lost to answers, window/(P+window), is the same
// over any round trip (a fifth for 16 MiB parts and a 4 MiB window). What a longer round trip
// changes is how many connections fill the link, and that is what widens; and some stores want
// every part but the last one size, so it cannot change once parts have gone.

const (
	farStore    = 20 * time.Millisecond
	maxWidening = 4
)

// widens decides whether a ReaderAt source's parts in flight may grow past concurrency, from the
// create's round trip (createRTT; 0 when this write sent no create).
func widens(concurrency int, createRTT time.Duration) bool {
	return concurrency > 1 && createRTT >= farStore
}

// widening is the decision of how many parts go at once; it keeps no clock and sends nothing.
type widening struct {
	limit, max int       // parts allowed in flight now, and at most
	start      time.Time // the epoch's start
	bytes      int64     // acknowledged in this epoch
	parts      int
	lastRate   float64 // bytes/s of the epoch before (0: none yet)
	lastLimit  int
	stopped    bool // a widening bought too little: the limit stays
}

func newWidening(concurrency int, now time.Time) *widening {
	return &widening{limit: concurrency, max: maxWidening * concurrency, start: now}
}

// partDone records size bytes acknowledged at now and returns how many more parts may go in
// flight from now on (0 but at an epoch's end). handed is when the part went, if it went in a
// slot handed off before its holder's answer (handoff.go), else zero: such a part may have been
// sent mostly before this epoch began, and counted whole it would lend the epoch a rate the
// parts in flight did not make, against which the next epoch's would seem too small: the
// widening would stop early. So the epoch counts the share of its bytes that its time in the
// epoch makes, assuming it moved evenly. Other parts count whole, as the epochs the threshold
// above was set from counted them.
func (p *widening) partDone(now, handed time.Time, size int64) int {
	if p.stopped {
		return 0
	}
	if !handed.IsZero() && handed.Before(p.start) && now.After(p.start) {
		size = int64(float64(size) * now.Sub(p.start).Seconds() / now.Sub(handed).Seconds())
	}
	p.bytes += size
	p.parts++
	if p.parts < p.limit {
		return 0
	}
	elapsed := now.Sub(p.start).Seconds()
	if elapsed <= 0 {
		p.stopped = true
		return 0
	}
	rate := float64(p.bytes) / elapsed
	if p.lastRate > 0 {
		grown := float64(p.limit)/float64(p.lastLimit) - 1
		if rate < p.lastRate*(1+grown/4) {
			p.stopped = true
			return 0
		}
	}
	next := min(p.max, p.limit+max(1, p.limit/2))
	if next <= p.limit {
		p.stopped = true
		return 0
	}
	add := next - p.limit
	p.lastRate, p.lastLimit, p.limit = rate, p.limit, next
	p.start, p.bytes, p.parts = now, 0, 0
	return add
}

// pacing carries out a widening: the slots channel was made maxWidening × concurrency deep with
// the tokens beyond concurrency held (reserved), so taking one out lets one more part go.
type pacing struct {
	mu       sync.Mutex
	decide   *widening
	reserved int
	hand     handoffs // parts that hand their slot on before their answer (handoff.go)
}

// startPacing lets this write's parts in flight widen (sendSections, before the first part).
func (w *Writer) startPacing() {
	conc := w.cfg.concurrency
	w.mu.Lock()
	rtt := w.session.upload.createRoundTrip()
	w.mu.Unlock()
	if w.intake.pace != nil || !widens(conc, rtt) {
		return
	}
	slots := make(chan struct{}, maxWidening*conc)
	for range maxWidening*conc - conc {
		slots <- struct{}{}
	}
	w.intake.slots = slots
	w.intake.pace = &pacing{decide: newWidening(conc, time.Now()), reserved: maxWidening*conc - conc}
	w.log.Debug("parts in flight may widen: a far store", zap.Duration("create_rtt", rtt), zap.Int("concurrency", conc),
		zap.String("upload_id", w.session.upload.current()), zap.Int64("size", w.cfg.sizeHint))
}

// paced records an acknowledged part of size bytes, and widens when the decision says so.
func (w *Writer) paced(part int32, size int64, hand *handoff) {
	if w.intake.pace == nil {
		return
	}
	var handed time.Time
	if hand != nil {
		handed = hand.handed
	}
	p := w.intake.pace
	p.mu.Lock()
	defer p.mu.Unlock()
	add := min(p.decide.partDone(time.Now(), handed, size), p.reserved)
	for range add {
		<-w.intake.slots // a reserved token: there are always at least p.reserved in the channel
		p.reserved--
	}
	if add > 0 {
		w.log.Debug("parts in flight widened", zap.Int("in_flight", p.decide.limit), zap.Float64("prior_mib_per_s", p.decide.lastRate/(1<<20)),
			zap.Int32("part", part), zap.String("upload_id", w.session.upload.current()))
	}
}
