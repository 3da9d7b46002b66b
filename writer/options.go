package writer

import (
	"bytes"
	"maps"
	"time"

	"go.uber.org/zap"

	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// Option configures an Uploader (the defaults of all its writes) or one Writer or Upload.
type Option func(*config)

// config is what the options set, grouped by what it governs; the groups are embedded, so a
// setting reads c.partSize wherever it lives.
type config struct {
	layoutConfig
	objectConfig
	verifyConfig
	runConfig
}

// layoutConfig: how the object is cut into requests (plan, parts, checksum).
type layoutConfig struct {
	rules       multipart.Rules
	rulesErr    error
	partSize    int64
	concurrency int
	threshold   int64
	sizeHint    int64
	expectedMax int64
	checksum    store.ChecksumAlgorithm
	checksumSet bool
	contentMD5  bool
}

// objectConfig: what the stored object carries beside its bytes.
type objectConfig struct {
	createOnly  bool
	contentType string
	metadata    map[string]string
	headers     store.Headers
	// sse is the server-side encryption asked for (encryption.go).
	sse store.Encryption
}

// verifyConfig: the evidence a write needs (evidence.go) and the savings it may take. Accept
// length-only; read back objects up to readBackLimit when nothing else proves them; replayable
// is set by Upload for a source it can re-read.
type verifyConfig struct {
	readBack      bool
	allowWeak     bool
	readBackLimit int64
	replayable    bool
	// savings: WithSavings (savings.go).
	savings Saving
}

// runConfig: what a write runs with and reports to.
type runConfig struct {
	budget       *Budget
	policy       *retry.Policy
	logger       *zap.Logger
	observer     func(Event)
	abortTimeout time.Duration
	// instrument: WithInstrumentation; span is the write's (set by startSpan, or by Upload for
	// the writers of its attempts), ended by the writer only when ownSpan.
	instrument Instrumentation
	span       WriteSpan
	ownSpan    bool
	// journal, journalDir and journalEndpoint: WithJournal (journal.go). journalDir is "" for a
	// journal the tests hand in.
	journal         journal.Journal
	journalDir      string
	journalEndpoint string
	// endpointCache: WithEndpointCache's directory (endpointcache.go); read by NewUploader only.
	endpointCache string
	hugePages     bool
}

// Defaults: 16 MiB parts (above every provider's documented floor), 4 parts in flight.
const (
	DefaultPartSize     = 16 << 20
	DefaultConcurrency  = 4
	defaultAbortTimeout = 30 * time.Second
	// defaultReadBackLimit is the largest object read back when neither the store's checksum
	// nor its ETag proves it (Upload of a replayable source reads back any size).
	defaultReadBackLimit = 64 << 20
)

func defaultConfig() config {
	rules, err := multipart.Profile("strict")
	return config{
		layoutConfig: layoutConfig{
			rules: rules, rulesErr: err, partSize: DefaultPartSize, concurrency: DefaultConcurrency,
			checksum: store.ChecksumCRC64NVME, sizeHint: -1,
		},
		verifyConfig: verifyConfig{readBackLimit: defaultReadBackLimit, savings: AllSavings},
		runConfig:    runConfig{abortTimeout: defaultAbortTimeout, logger: zap.NewNop()},
	}
}

// WithProfile selects the provider rules by name ("aws", "minio", "r2", ... or a rules string
// such as "min=5MiB,max=5GiB,parts=10000,equal"). The default is "strict", which every known
// store accepts. An unknown name fails New with an error listing the valid ones.
func WithProfile(nameOrRules string) Option {
	return func(c *config) { c.rules, c.rulesErr = multipart.Parse(nameOrRules) }
}

// WithRules sets the provider rules directly.
func WithRules(r multipart.Rules) Option {
	return func(c *config) { c.rules, c.rulesErr = r, r.Validate() }
}

// WithPartSize sets the preferred part size; the plan may raise it (to stay under the part-count
// limit) but never lowers it below the rules' minimum: a forbidden size is an error.
func WithPartSize(n int64) Option { return func(c *config) { c.partSize = n } }

// WithConcurrency sets how many part buffers (and so parts in flight) one writer may hold.
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithMemoryBudget bounds the part buffers of writes together. Given to NewUploader, it is the
// budget of every write of that Uploader; without it each write has its own budget of
// concurrency × part size.
func WithMemoryBudget(b *Budget) Option { return func(c *config) { c.budget = b } }

// WithChecksum chooses the checksum: CRC64NVME, CRC32C, CRC32, or ChecksumNone (then
// MD5 ETags or length are the only checks). A store whose profile does not accept the algorithm
// gets none, and the Result says which method verified the object. Without it the writer sends
// the rules' preferred CRC (multipart.Rules.Checksum: CRC64NVME unless the profile names a CRC
// its store checks more cheaply, as "minio" and "versitygw" do CRC32C).
func WithChecksum(a store.ChecksumAlgorithm) Option {
	return func(c *config) { c.checksum, c.checksumSet = a, true }
}

// WithContentMD5 also sends Content-MD5 with every request (and checks MD5 ETags where the store
// makes them). It costs an MD5 pass over the data.
func WithContentMD5(on bool) Option { return func(c *config) { c.contentMD5 = on } }

// WithCreateOnly makes the write fail with a Precondition error if the key exists
// (If-None-Match: *), except when the existing object is byte-for-byte the one being written (a
// retry after a lost response), which is reported as Result.AlreadyExisted.
func WithCreateOnly(on bool) Option { return func(c *config) { c.createOnly = on } }

// WithContentType sets the object's Content-Type.
func WithContentType(ct string) Option { return func(c *config) { c.contentType = ct } }

// WithHeaders sets the standard headers stored with the object (Cache-Control,
// Content-Disposition, Content-Encoding, Content-Language); empty ones are not sent.
func WithHeaders(h store.Headers) Option { return func(c *config) { c.headers = h } }

// WithMetadata sets user metadata (x-amz-meta-*).
func WithMetadata(m map[string]string) Option { return func(c *config) { c.metadata = m } }

// WithRetry sets the retry policy. Given to NewUploader, every write of that Uploader shares it,
// and so its retry budget; given to one write, that write uses it instead of the Uploader's.
func WithRetry(p *retry.Policy) Option { return func(c *config) { c.policy = p } }

// WithLogger logs through l (no-op by default). Lines carry bucket, key, size, part, upload id
// and attempt where they apply.
func WithLogger(l *zap.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithObserver calls fn for every Event. fn must be quick and safe for concurrent use; a panic
// in it is recovered and ignored.
func WithObserver(fn func(Event)) Option { return func(c *config) { c.observer = fn } }

// WithThreshold sets the largest object sent as one PutObject (default: the part size; capped at
// the part size and at the rules' single-PUT limit).
func WithThreshold(n int64) Option { return func(c *config) { c.threshold = n } }

// WithSize declares the exact size the writer will receive. A stream that turns out shorter or
// longer fails; the plan uses the size to pick a part size inside the part-count limit.
func WithSize(n int64) Option { return func(c *config) { c.sizeHint = n } }

// WithExpectedMaxSize tells a writer of unknown size how large the object may grow, so the fixed
// part size leaves room under the part-count limit. Past the resulting ceiling the write fails
// with a Compatibility error before anything is completed.
func WithExpectedMaxSize(n int64) Option { return func(c *config) { c.expectedMax = n } }

// WithReadBack re-reads the whole object after commit and compares its checksum: the strongest
// and most expensive verification.
func WithReadBack(on bool) Option { return func(c *config) { c.readBack = on } }

// WithAllowWeakVerification accepts a write whose content nothing could prove (the store
// reported no checksum of it, its ETag is not an MD5 of it, and it was not read back) on its
// length alone. Result.Verified is then "length-only", Result.Unproven says what was missing,
// and a warning is logged. Without it such a write fails with an Integrity error coded
// Unverifiable, and the object it committed is deleted.
func WithAllowWeakVerification(on bool) Option { return func(c *config) { c.allowWeak = on } }

// WithReadBackLimit sets the largest object read back as the last resort when neither the
// store's checksum nor its ETag proves it (default 64 MiB; 0 never reads back,
// except for Upload of a replayable source). WithReadBack(true) reads back every object. A
// multipart write whose parts skipped their MD5s because their receipts echoed the checksum, on a
// store whose HEAD then reports none, is read back whatever its size unless n is 0 (once per
// Uploader and bucket: its later writes compute the MD5s).
func WithReadBackLimit(n int64) Option { return func(c *config) { c.readBackLimit = n } }

// WithHugePages asks the kernel to back the part buffers a write allocates afresh with
// transparent huge pages past their first 2 MiB, so a buffer faults once per 2 MiB instead of
// once per 4 KiB page as it fills. For a program whose buffers are all fresh, one write per
// process (the CLI turns it on); off by default, since a long-lived process reuses its buffers
// through one Uploader, and huge-page advice on heap memory the runtime later reuses for other
// objects is the host's choice. GODEBUG=disablethp=1 overrides it. A hint: without transparent
// huge pages in the kernel it does nothing.
func WithHugePages(on bool) Option { return func(c *config) { c.hugePages = on } }

// WithAbortTimeout bounds the clean-up (abort, delete) that runs after a failure on a context
// detached from the caller's (default 30 s).
func WithAbortTimeout(d time.Duration) Option { return func(c *config) { c.abortTimeout = d } }

// WithEncryption asks the store for server-side encryption e (store.Encryption{} for none, which
// also turns off an Uploader's encryption for one write); an invalid e fails the write
// (Permanent) naming the rule. After commit the HEAD must report what was asked: a store that
// answered 200 but reports no or other encryption fails the write with a Compatibility error
// coded EncryptionNotApplied, and the object it stored is deleted; Result.Encryption says what the
// store reported.
//
//   - SSE-S3 (Type store.SSES3): keys the store manages; the HEAD must report AES256.
//   - SSE-KMS (store.SSEKMS, KMSKeyID "" for the store's default key, an optional KMSContext and
//     BucketKey): the HEAD must report aws:kms and, when KMSKeyID is set, that key (the id itself
//     or an ARN ending in it). Stores make SSE-KMS ETags that are not MD5s: the proof is the
//     checksum, or a read-back.
//   - SSE-C (store.SSEC, a CustomerKey of 32 bytes; its MD5 is computed for you): the key is sent
//     on every request that needs it (PutObject, CreateMultipartUpload, UploadPart, HEAD, GET)
//     and never appears in logs, errors, Results or journal records; the HEAD must report the
//     key's MD5. Recover needs the key again (RecoverOptions.SSECustomerKeys). Stores need TLS
//     for SSE-C (MinIO refuses it over plain HTTP).
//
// The key and the context are copied: the caller may reuse them.
func WithEncryption(e store.Encryption) Option {
	e.CustomerKey = store.CustomerKey(bytes.Clone(e.CustomerKey))
	e.KMSContext = maps.Clone(e.KMSContext)
	return func(c *config) { c.sse = e }
}
