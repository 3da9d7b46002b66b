package writer

import (
	"bytes"
	"maps"
	"time"

	"go.uber.org/zap"

	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/internal/logredact"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// Options configures writes, in the style of aws-sdk-go-v2's transfer managers: NewUploader,
// New, Upload and the Uploader's methods take functions that edit one Options, which starts at
// the defaults documented on each field; a write's own functions run after its Uploader's, on a copy.
//
//	up, err := writer.NewUploader(st, func(o *writer.Options) {
//		o.PartSize = 64 << 20
//		o.Logger = logger
//	})
//
// A setting that no write could use (an unknown profile, a non-positive part size, a
// concurrency outside 1 to 1024, an unsupported checksum, invalid encryption, SSE-C to a plain
// http:// endpoint without AllowSSECOverHTTP) fails NewUploader, New or Upload with a Permanent
// error that names it. Maps, keys and contexts are copied when the write
// starts: the caller may reuse them afterwards.
type Options struct {
	// Profile names the provider rules ("aws", "minio", "r2", ... or a rules string such as
	// "min=5MiB,max=5GiB,parts=10000,equal"). The default, "strict", is accepted by every known
	// store; "" means the default.
	Profile string
	// Rules, when not nil, are the provider rules, in place of Profile.
	Rules *multipart.Rules

	// PartSize is the preferred part size (default DefaultPartSize); the plan may raise it, to
	// stay under the part-count limit, but a size under the rules' minimum is an error.
	PartSize int64
	// Concurrency is how many part buffers (and so parts in flight) one write may hold
	// (default DefaultConcurrency; 1 to 1024); 1 sends one part at a time. An Upload from an io.ReaderAt
	// holds no part buffer, so with Concurrency above 1 and a far store (one whose
	// CreateMultipartUpload is slow to answer), it may put more parts in flight, as long as the
	// rate it measures grows with them, up to a fixed multiple of Concurrency; and a part whose
	// bytes have all been sent may let the next part start before its answer comes. Nearer
	// stores, and streams, keep Concurrency.
	Concurrency int
	// Threshold is the largest object sent as one PutObject (0, the default: the part size;
	// capped at the part size and at the rules' single-PUT limit).
	Threshold int64
	// Size declares the exact size the write will receive (default multipart.UnknownSize). A
	// stream that turns out shorter or longer fails; the plan uses the size to pick a part size
	// inside the part-count limit.
	Size int64
	// ExpectedMaxSize tells a write of unknown size how large the object may grow, so the fixed
	// part size leaves room under the part-count limit. Past the resulting ceiling the write
	// fails with a Compatibility error before anything is completed.
	ExpectedMaxSize int64
	// MemoryBudget bounds the part buffers of writes together. Set for NewUploader, it is the
	// budget of every write of that Uploader; without it each write has its own budget of
	// concurrency × part size.
	MemoryBudget *Budget

	// Checksum is the checksum sent: CRC64NVME, CRC32C or CRC32. "" (the default) is the rules'
	// preferred CRC (multipart.Rules.Checksum: CRC64NVME unless the profile names one its store
	// checks more cheaply, as "minio" and "versitygw" do CRC32C). A store whose profile does not
	// accept the algorithm gets none, and the Result says which method verified the object.
	Checksum store.ChecksumAlgorithm
	// NoChecksum sends no checksum header. The adapters in store/ then sign each body's SHA-256
	// into its request, so the store still refuses a damaged body; after commit, MD5 ETags or a
	// read-back (or, with AllowWeakVerification, the length) prove the object.
	NoChecksum bool
	// ContentMD5 also sends Content-MD5 with every request (and checks MD5 ETags where the
	// store makes them). It costs an MD5 pass over the data.
	ContentMD5 bool

	// CreateOnly makes the write fail with a Precondition error if the key exists
	// (If-None-Match: *), except when the existing object is byte-for-byte the one being written
	// (a retry after a lost response, or the same bytes written before), which is reported as
	// Result.AlreadyExisted; Result.CommitAnswerLost tells the two apart. The header is
	// sent at every profile: of two writers racing to one new key exactly one lands where the
	// store honours it. Unless the profile says the store honours it (ConditionalPut,
	// ConditionalComplete), the key is also checked free with a HEAD before the commit, since the
	// store may ignore it; a store that refuses it (501 NotImplemented) gets the commit again
	// without it, with a note.
	CreateOnly bool
	// ContentType is the object's Content-Type.
	ContentType string
	// Headers are the standard headers stored with the object (Cache-Control,
	// Content-Disposition, Content-Encoding, Content-Language); empty ones are not sent.
	Headers store.Headers
	// Metadata is the object's user metadata (x-amz-meta-*).
	Metadata map[string]string
	// Encryption is the server-side encryption asked for (the zero value: none, which also
	// turns off an Uploader's encryption for one write). After commit the HEAD must report what
	// was asked: a store that answered 200 but reports no or other encryption fails the write
	// with a Compatibility error coded EncryptionNotApplied, and the object it stored is
	// deleted; Result.Encryption says what the store reported.
	//
	//   - SSE-S3 (Type store.SSES3): keys the store manages; the HEAD must report AES256.
	//   - SSE-KMS (store.SSEKMS, KMSKeyID "" for the store's default key, an optional
	//     KMSContext and BucketKey): the HEAD must report aws:kms and, when KMSKeyID is set, that
	//     key (the id itself or an ARN ending in it). Stores make SSE-KMS ETags that are not
	//     MD5s: the proof is the checksum, or a read-back.
	//   - SSE-C (store.SSEC, a CustomerKey of 32 bytes; its MD5 is computed for you): the key is
	//     sent on every request that needs it (PutObject, CreateMultipartUpload, UploadPart,
	//     HEAD, GET) and never appears in logs, errors, Results or journal records; the HEAD must
	//     report the key's MD5. Recover needs the key again (RecoverOptions.SSECustomerKeys).
	//     The key travels in a request header, so SSE-C needs TLS: to a store whose endpoint
	//     (store.Endpointer) is plain http:// the write fails before anything is sent, with a
	//     Permanent error, unless AllowSSECOverHTTP is set.
	Encryption store.Encryption
	// AllowSSECOverHTTP lets an SSE-C write (and a Recover given SSE-C keys) send the customer
	// key to a plain http:// endpoint, where anyone on the path can read it: for a test store
	// on loopback, or a link that is encrypted underneath. The first such write of an Uploader
	// logs a warning.
	AllowSSECOverHTTP bool

	// ReadBack re-reads the whole object after commit and compares its checksum: the strongest
	// and most expensive verification. The HEAD is sent too, whatever the commit's answer
	// proved; to have the HEAD alone after every write, turn SaveRereads off instead.
	ReadBack bool
	// ReadBackLimit is the largest object read back as the last resort when neither the
	// store's checksum nor its ETag proves it (default 64 MiB; 0 never reads back, except for
	// Upload of a replayable source). A multipart write whose parts skipped their MD5s because
	// their receipts echoed the checksum, on a store whose HEAD then reports none, is read back
	// whatever its size unless the limit is 0 (once per Uploader and bucket: its later writes
	// compute the MD5s).
	ReadBackLimit int64
	// AllowWeakVerification accepts a write whose content nothing could prove (the store
	// reported no checksum of it, its ETag is not an MD5 of it, and it was not read back) on its
	// length alone. Result.Verified is then "length-only", Result.Unproven says what was
	// missing, and a warning is logged. Without it such a write fails with an Integrity error
	// coded Unverifiable, and the object it committed is deleted.
	AllowWeakVerification bool
	// Savings are the cost-saving strategies writes may use (default: all of them; 0: none, the
	// reference path). HugePages and EndpointCache are savings too, off unless asked for.
	Savings Saving
	// HugePages asks the kernel to back the part buffers a write allocates afresh with
	// transparent huge pages past their first 2 MiB, so a buffer faults once per 2 MiB instead
	// of once per 4 KiB page as it fills. For a program whose buffers are all fresh, one write
	// per process (the CLI turns it on); off by default, since a long-lived process reuses its
	// buffers through one Uploader, and huge-page advice on heap memory the runtime later
	// reuses for other objects is the host's choice. GODEBUG=disablethp=1 overrides it. A hint:
	// without transparent huge pages in the kernel it does nothing.
	HugePages bool
	// EndpointCache is a directory that keeps what an Uploader's writes learn about its endpoint
	// that spares work (whether the store checks part checksums: the probe that asks, and the
	// MD5s of parts whose receipts echo the checksum), for a day, so the next process starts
	// from it. For programs that make one write per process, as the CLI does; a long-lived
	// process keeps one Uploader instead, whose facts live as long as it does. A kept fact only
	// ever spares work a write could do again: a wrong or stale one makes a write compute more,
	// never accept less. Read by NewUploader only (a write's own setting does nothing); nothing
	// is kept for a store that names no endpoint (store.Endpointer).
	EndpointCache string

	// Retry is the retry policy (default: a retry.New() of the Uploader's own). Set for
	// NewUploader, every write of that Uploader shares it, and so its retry budget; set for one
	// write, that write uses it instead (nil: the Uploader's).
	Retry *retry.Policy
	// Logger receives the log (nil, the default: none). Lines carry bucket, key, size, part,
	// upload id and attempt where they apply; their text is redacted as errors.Redact does.
	Logger *zap.Logger
	// Observer is called for every Event. It must be quick and safe for concurrent use; a panic
	// in it is recovered and ignored.
	Observer func(Event)
	// Instrumentation is told of every write (and Recover); nil, the default, is none. A
	// Writer's span ends at Close or Abort (a Writer never closed leaves it open); an Upload's
	// when the call returns.
	Instrumentation Instrumentation
	// AbortTimeout bounds the clean-up (abort, delete) that runs after a failure, on a context
	// detached from the caller's (default 60 s; 0 or less: the default). Within it the abort
	// rides out a store that takes no request (retry.Options.OutageMaxElapsed) for up to this
	// less the longest retry sleep (20 s): 40 s at the defaults.
	AbortTimeout time.Duration

	// JournalDir, when set, records every multipart upload of the write in that directory
	// (created, mode 0700, by the first write that needs it; one JSON file per upload, claimed
	// with an flock, so several processes may share it), so a process that dies mid-way leaves
	// what Recover needs to abort the upload or confirm that its Complete landed, and what a new
	// Upload of the same file needs to resume it. JournalEndpoint names the store the upload
	// went to (the CLI uses the endpoint URL); Recover acts only on records of the endpoint it is
	// given. docs/usage.md describes the record and what each step costs.
	//
	// The directory decides which uploads are aborted, so only its owner may write to it: on
	// unix systems it must be owned by the process's effective user and not be group- or
	// world-writable (NewUploader, a write and Recover refuse it otherwise, naming the rule).
	// Its files are opened without following symbolic links; only regular files up to the size
	// of a 10,000-part record are read, and anything else in it (a link, FIFO, device, oversized
	// or unparsable file) is reported by Recover and skipped.
	//
	// The record is written (and fsynced) when the upload is created, after every part the
	// store acknowledged and safeput verified, and just before Complete; it is removed when the
	// write lands verified or the upload is confirmed aborted. A journal that cannot record
	// fails the write (Permanent): a write that could not be recovered after a crash is not the
	// write asked for.
	//
	// With a replayable source of known size (an io.ReaderAt such as *os.File), Upload resumes
	// the newest unclaimed record for the same endpoint, bucket, key, size, part size and
	// checksum: parts the store still lists as recorded, whose checksum recomputed from the
	// source matches, are not sent again (Result.ResumedParts); anything else is sent again. A
	// single-PUT object (at most one part) needs no journal and writes none.
	JournalDir      string
	JournalEndpoint string
}

// defaultOptions are the options every write starts from.
func defaultOptions() Options {
	return Options{
		Profile: multipart.DefaultProfile, PartSize: DefaultPartSize, Concurrency: DefaultConcurrency,
		Size: multipart.UnknownSize, ReadBackLimit: defaultReadBackLimit, Savings: allSavings,
		AbortTimeout: defaultAbortTimeout,
	}
}

// clone returns o with its own copies of what a function could change in place (the metadata
// and KMS context maps, the customer key, the rules), so a write's functions cannot reach into
// its Uploader's options.
func (o Options) clone() Options {
	o.Metadata = maps.Clone(o.Metadata)
	o.Encryption.KMSContext = maps.Clone(o.Encryption.KMSContext)
	o.Encryption.CustomerKey = store.CustomerKey(bytes.Clone(o.Encryption.CustomerKey))
	if o.Rules != nil {
		r := *o.Rules
		o.Rules = &r
	}
	return o
}

// apply runs the caller's functions on o (nil ones are skipped).
func (o *Options) apply(fns []func(*Options)) {
	for _, fn := range fns {
		if fn != nil {
			fn(o)
		}
	}
}

// config resolves o into what a write runs with; it shares o's maps and key, so o is a clone
// the caller's functions can no longer reach (NewUploader, Uploader.config). The journal of a write whose directory is its
// Uploader's (base, nil for the Uploader itself) is the Uploader's own, so its writes and
// Recover agree on the records each holds.
func (o *Options) config(base *config) config {
	c := config{
		layoutConfig: layoutConfig{
			partSize: o.PartSize, concurrency: o.Concurrency, threshold: o.Threshold,
			sizeHint: o.Size, expectedMax: o.ExpectedMaxSize, contentMD5: o.ContentMD5,
		},
		objectConfig: objectConfig{
			createOnly: o.CreateOnly, contentType: o.ContentType, headers: o.Headers,
			metadata: o.Metadata, sse: o.Encryption, allowSSECOverHTTP: o.AllowSSECOverHTTP,
		},
		verifyConfig: verifyConfig{
			readBack: o.ReadBack, allowWeak: o.AllowWeakVerification,
			readBackLimit: o.ReadBackLimit, savings: o.Savings,
		},
		runConfig: runConfig{
			budget: o.MemoryBudget, policy: o.Retry, logger: o.Logger, observer: o.Observer,
			abortTimeout: o.AbortTimeout, instrument: o.Instrumentation,
			journalDir: o.JournalDir, journalEndpoint: o.JournalEndpoint,
			endpointCache: o.EndpointCache, hugePages: o.HugePages,
		},
	}
	switch {
	case o.Rules != nil:
		c.rules, c.rulesErr = *o.Rules, o.Rules.Validate()
	case o.Profile == "":
		c.rules, c.rulesErr = multipart.Profile(multipart.DefaultProfile)
	default:
		c.rules, c.rulesErr = multipart.Parse(o.Profile)
	}
	switch {
	case o.NoChecksum:
		c.checksum, c.checksumSet = store.ChecksumNone, true
	case o.Checksum != "":
		c.checksum, c.checksumSet = o.Checksum, true
	}
	// Every line is redacted where it is written: an adapter's error may echo the request's
	// credentials (internal/logredact).
	c.logger = logredact.Logger(c.logger)
	if c.abortTimeout <= 0 {
		c.abortTimeout = defaultAbortTimeout
	}
	switch {
	case base != nil && base.journalDir == o.JournalDir:
		c.journal = base.journal
	case o.JournalDir != "":
		c.journal = journal.At(o.JournalDir)
	}
	return c
}

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
	// allowSSECOverHTTP: Options.AllowSSECOverHTTP (encryption.go).
	allowSSECOverHTTP bool
}

// verifyConfig: the evidence a write needs (evidence.go) and the savings it may take. Accept
// length-only; read back objects up to readBackLimit when nothing else proves them; replayable
// is set by Upload for a source it can re-read.
type verifyConfig struct {
	readBack      bool
	allowWeak     bool
	readBackLimit int64
	replayable    bool
	// savings: Options.Savings (savings.go).
	savings Saving
}

// runConfig: what a write runs with and reports to.
type runConfig struct {
	budget       *Budget
	policy       *retry.Policy
	logger       *zap.Logger
	observer     func(Event)
	abortTimeout time.Duration
	// instrument: Options.Instrumentation; span is the write's (set by startSpan, or by Upload for
	// the writers of its attempts), ended by the writer only when ownSpan.
	instrument Instrumentation
	span       WriteSpan
	ownSpan    bool
	// journal, journalDir and journalEndpoint: Options.JournalDir (journal.go). journalDir is "" for a
	// journal the tests hand in.
	journal         journal.Journal
	journalDir      string
	journalEndpoint string
	// endpointCache: Options.EndpointCache's directory (endpointcache.go); read by NewUploader only.
	endpointCache string
	hugePages     bool
	// laterWrite: the write is not its Uploader's first (Uploader.begun), so what it learns may
	// serve a later one.
	laterWrite bool
}

// Defaults: 16 MiB parts (above every provider's documented floor), 4 parts in flight.
const (
	DefaultPartSize     = 16 << 20
	DefaultConcurrency  = 4
	defaultAbortTimeout = 60 * time.Second
	// defaultReadBackLimit is the largest object read back when neither the store's checksum
	// nor its ETag proves it (Upload of a replayable source reads back any size).
	defaultReadBackLimit = 64 << 20
)

// maxConcurrency is the most parts in flight one write may have (Options.Concurrency): far more
// than a link to one store gains from (the adapters keep 128 idle connections per host), and each
// part in flight holds a goroutine, a connection and, for a stream, a part buffer, so a larger
// value is a mistake that would only exhaust memory.
const maxConcurrency = 1024

func defaultConfig() config {
	o := defaultOptions()
	return o.config(nil)
}
