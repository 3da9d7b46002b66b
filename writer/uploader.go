package writer

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/endpointcache"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// Uploader writes objects to one store and owns what its writes share: the store, the retry
// policy (and with it the retry budget and rate limiter), the memory budget, the logger, the
// observer, the journal, and what its writes learned about the store (whether it takes the
// checksum header, whether HEAD reports it, whether its ETags are MD5s), so a later write skips
// what cannot help. Writes made from one Uploader share these; two Uploaders share nothing.
//
// An Uploader is safe for concurrent use. Make one per store and keep it as long as the process
// talks to that store, as with an http.Client: a fresh Uploader per write re-learns the store and
// gives every write a retry budget of its own.
//
// The package functions New, Upload and Recover are shorthands that make a fresh Uploader for
// each call (the way http.Get uses http.DefaultClient, except that nothing outlives the call):
// their writes share nothing with one another.
type Uploader struct {
	st store.Store
	// opts is what every write's options start from: NewUploader's; cfg is opts resolved, and
	// its policy is never nil.
	opts  Options
	cfg   config
	facts factTable
	// insecureWarned: a store with certificate verification off is warned about once, on the
	// first write, through that write's logger (the C ABI passes its logger per write).
	insecureWarned atomic.Bool
	// sseCWarned: SSE-C sent over plain HTTP (Options.AllowSSECOverHTTP) is warned about once.
	sseCWarned atomic.Bool
	// endpoint is the store's (store.Endpointer), "" when it names none; endpointRules are the
	// provider rules it names (multipart.ForEndpoint), found once, not per write.
	endpoint      string
	endpointRules *multipart.Rules
	// insecure: the store does not verify certificates (store.InsecureTLS), found once.
	insecure bool
	// begun counts the writes begun through Upload and New. The first may be the Uploader's only
	// one (a package shorthand's, a process's one object, an Uploader made per write), so it
	// sends no checksum probe beside a single PUT (probesBesidePut): what the probe learns serves
	// only later writes, and the write would wait for its requests.
	begun atomic.Int64
}

// NewUploader returns an Uploader for st. optFns set the defaults of every write it makes (a
// write's own functions run after them); what they name is shared by all its writes:
//   - Retry: the policy, and so its retry budget (default: a retry.New() of its own);
//   - MemoryBudget: the part-buffer memory of all writes together (default: none shared, each
//     write has concurrency × part size of its own);
//   - Logger, Observer, JournalDir, Instrumentation: where every write logs, reports, journals
//     and is traced.
//
// It fails (Permanent) on a nil store or a setting that no write could use (an unknown profile,
// a part size or concurrency out of range, an unsupported checksum, SSE-C to a plain http://
// endpoint without AllowSSECOverHTTP, a JournalDir that exists and breaks the journal's rules:
// see Options.JournalDir).
func NewUploader(st store.Store, optFns ...func(*Options)) (*Uploader, error) {
	opts := defaultOptions()
	opts.apply(optFns)
	opts = opts.clone() // the caller's maps and key stay the caller's
	cfg := opts.config(nil)
	bad := func(format string, args ...any) error {
		return sperrors.New(sperrors.Permanent, "NewUploader", format, args...)
	}
	if st == nil {
		return nil, bad("nil store")
	}
	if msg := cfg.invalid(); msg != "" {
		return nil, bad("%s", msg)
	}
	if err := journalDirUsable(cfg.journalDir); err != nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "NewUploader", Message: "the journal directory cannot be used", Err: err}
	}
	u := newUploader(st, opts, cfg)
	// Checked here too, so a program that gives the key to every write learns at once; the
	// warning waits for the first write that sends it.
	if msg := u.sseCOverHTTP(cfg.customerKeyAsked(), cfg.allowSSECOverHTTP, nil); msg != "" {
		return nil, bad("%s", msg)
	}
	return u, nil
}

// newUploader is NewUploader without the checks: the package shorthands leave them to the write,
// which reports them as it always has (Op "New").
func newUploader(st store.Store, opts Options, cfg config) *Uploader {
	if cfg.policy == nil {
		cfg.policy = retry.New()
	}
	opts.Retry = cfg.policy
	u := &Uploader{st: st, opts: opts, cfg: cfg}
	u.setEndpoint(st)
	u.attachEndpointCache(cfg.endpointCache)
	return u
}

// setEndpoint records what st's endpoint says that every write would otherwise look up.
func (u *Uploader) setEndpoint(st store.Store) {
	if e, ok := store.Find[store.Endpointer](st); ok {
		u.endpoint = e.Endpoint()
		if r, ok := multipart.ForEndpoint(u.endpoint); ok {
			u.endpointRules = &r
		}
	}
	in, ok := store.Find[store.InsecureTLS](st)
	u.insecure = ok && in.InsecureSkipVerify()
}

// shorthand is the fresh Uploader of st that the package functions New, Upload and Recover make
// for one call.
func shorthand(st store.Store) *Uploader {
	opts := defaultOptions()
	return newUploader(st, opts, opts.config(nil))
}

// writeConfig is config for a write that Upload or New begins, counted in begun.
func (u *Uploader) writeConfig(optFns []func(*Options)) config {
	cfg := u.config(optFns)
	cfg.laterWrite = u.begun.Add(1) > 1
	return cfg
}

// config returns what a write runs with: u's options with the write's own functions applied.
func (u *Uploader) config(optFns []func(*Options)) config {
	if len(optFns) == 0 {
		// What opts.config would make again: a write reads its config's maps and never changes
		// them, so the Uploader's serve it as they are.
		u.warnInsecure(u.cfg.logger)
		return u.cfg
	}
	opts := u.opts.clone()
	opts.apply(optFns)
	cfg := opts.config(&u.cfg)
	if cfg.policy == nil { // Retry set to nil for one write: the Uploader's policy
		cfg.policy = u.cfg.policy
	}
	u.warnInsecure(cfg.logger)
	return cfg
}

// warnInsecure logs, once per Uploader, that its store does not verify certificates (the
// adapters' InsecureSkipVerify): a choice that must show in the logs, not only in the code.
func (u *Uploader) warnInsecure(l *zap.Logger) {
	if !u.insecure || !u.insecureWarned.CompareAndSwap(false, true) {
		return
	}
	f := []zap.Field{}
	if u.endpoint != "" {
		f = append(f, zap.String("endpoint", u.endpoint))
	}
	l.Warn("TLS certificate verification is off for this store: anyone on the path can read and alter what is sent (trust a private CA with a CA bundle instead)", f...)
}

// New returns a Writer for bucket/key, configured by u's options and then opts. Nothing is sent
// until a part fills or Close, except for a declared Size over the single-PUT threshold: that
// write is multipart whatever comes, so its CreateMultipartUpload goes at once, beside the
// filling of its first part. ctx governs the whole write: when it ends, in-flight requests stop
// and Close returns Canceled. End every Writer with Close or Abort: one left without either once
// its upload began leaves that upload incomplete (Recover finds it when the write is journaled).
func (u *Uploader) New(ctx context.Context, bucket, key string, optFns ...func(*Options)) (*Writer, error) {
	if u == nil {
		return nil, errNilUploader("New")
	}
	w, err := u.newWriter(ctx, bucket, key, u.writeConfig(optFns))
	if err == nil {
		warmConnections(w.st, w.bucket, w.plan, w.cfg.concurrency, func() bool { return w.decider().probes(w.facts.checking()) })
		w.createEarly()
	}
	return w, err
}

// Upload writes everything r yields to bucket/key and returns the verified Result; see the
// package function Upload for what it makes of r.
func (u *Uploader) Upload(ctx context.Context, bucket, key string, r io.Reader, optFns ...func(*Options)) (*Result, error) {
	if u == nil {
		return nil, errNilUploader("Upload")
	}
	return u.upload(ctx, bucket, key, r, u.writeConfig(optFns))
}

// Recover settles the uploads recorded in u's journal (Options.JournalDir) for u's store; see the
// package function Recover. Unset fields of opts take u's: Endpoint the journal's endpoint
// identity, Policy u's retry policy, Logger u's logger.
func (u *Uploader) Recover(ctx context.Context, opts RecoverOptions) (*RecoverReport, error) {
	if u == nil {
		return nil, errNilUploader("Recover")
	}
	if u.cfg.journal == nil {
		return nil, sperrors.New(sperrors.Permanent, "Recover", "the Uploader has no journal (Options.JournalDir)")
	}
	if err := journalDirReady(u.cfg.journalDir, false); err != nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Recover", Message: "cannot read the journal", Err: err}
	}
	if opts.Endpoint == "" {
		opts.Endpoint = u.cfg.journalEndpoint
	}
	if opts.Policy == nil {
		opts.Policy = u.cfg.policy
	}
	if opts.Logger == nil {
		opts.Logger = u.cfg.logger
	}
	u.warnInsecure(opts.Logger)
	in := u.cfg.instrument
	if in == nil {
		return u.recover(ctx, u.cfg.journal, opts)
	}
	// Recovery's requests go through the instrumented store; its writers start no write spans.
	ru := &Uploader{st: wrapStore(in, u.st), cfg: u.cfg, endpoint: u.endpoint, endpointRules: u.endpointRules, insecure: u.insecure}
	ru.cfg.instrument = nil
	rep, err := ru.recover(ctx, u.cfg.journal, opts)
	func() {
		defer func() { _ = recover() }() // the instrumentation's panic must not break Recover
		in.Recovered(ctx, rep, err)
	}()
	return rep, err
}

// errNilUploader is the error of a method called on a nil *Uploader (a field never set, say):
// a classified error rather than a panic.
func errNilUploader(op string) error {
	return sperrors.New(sperrors.Permanent, op, "nil *writer.Uploader (make one with NewUploader)")
}

// factTable is what an Uploader's writes learned about its store, per bucket: whether ETags are
// MD5s can differ by bucket (SSE-KMS).
type factTable struct {
	mu       sync.Mutex
	byBucket map[string]*endpointFacts
	// cache, when the Uploader has one (Options.EndpointCache), starts each bucket's facts from
	// what an earlier process learned; cacheID names the adapter and endpoint in its keys.
	cache   *endpointcache.Cache
	cacheID string
}

func (t *factTable) forBucket(bucket string) *endpointFacts {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.byBucket[bucket]
	if f == nil {
		if t.byBucket == nil {
			t.byBucket = map[string]*endpointFacts{}
		}
		f = &endpointFacts{}
		if t.cache != nil {
			f.fromCache(t.cache, t.cacheID+"\n"+bucket)
		}
		t.byBucket[bucket] = f
	}
	return f
}
