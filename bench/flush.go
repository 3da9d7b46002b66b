package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/safeput/safeput/bench/internal/link"
	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// The flush workload: many small objects written by a few workers through one long-lived client,
// the way a flush node writes binlogs, stats and index shards. Every implementation makes its
// client once per link and shares it between all workers; each writes at its own defaults.

// FlushImpl is one uploader of the flush workload.
type FlushImpl struct {
	Name string
	Role Role
	// How is what the row's client is and how each object is handed to it, for the legend.
	How string
	// Checksum is the checksum header its PutObject carries at its defaults ("" for none), for
	// the legend; TestFlushChecksumHeaders holds it to what goes on the wire.
	Checksum string
	New      func(srv s3test.Server, bucket string, p Params) (FlushPut, error)
}

// FlushPut writes body at key through the client shared by every worker.
type FlushPut func(ctx context.Context, key string, body []byte) (FlushNote, error)

// FlushNote is what a write reports about itself, where its uploader says: the requests it sent
// and what verified it (empty for a peer, which reports neither).
type FlushNote struct {
	Requests   int
	VerifiedBy string
}

// FlushImpls lists the flush workload's uploaders in the order its tables list them.
func FlushImpls() []FlushImpl {
	return []FlushImpl{
		{Name: "safeput/aws", Role: RoleSafeput, How: "one `writer.Uploader` at its defaults over the aws adapter; `Upload` of a `*bytes.Reader` (size known)", Checksum: "x-amz-checksum-crc32c", New: flushSafeputUpload(newAWSStore)},
		{Name: "safeput/minio", Role: RoleSafeput, How: "the same over the minio adapter", Checksum: "x-amz-checksum-crc32c", New: flushSafeputUpload(newMinioStore)},
		{Name: "safeput-writer/aws", Role: RoleSafeput, How: "the same Uploader's `New`, one `Write` of the body, `Close`: a stream of unknown size (the `io.Writer` path)", Checksum: "x-amz-checksum-crc32c", New: flushSafeputWriter(newAWSStore)},
		{Name: "safeput-writer/minio", Role: RoleSafeput, How: "the same over the minio adapter", Checksum: "x-amz-checksum-crc32c", New: flushSafeputWriter(newMinioStore)},
		{Name: "minio-go", Role: RolePeer, How: "one `minio.Client` at its defaults; `PutObject` of a `*bytes.Reader` with its size", New: flushMinioGo},
		{Name: "minio-go+crc32c", Role: RolePeer, How: "minio-go asked for a checksum, as its docs say: a `minio.Client` with `TrailingHeaders`; `PutObject` with `Checksum: minio.ChecksumCRC32C`", Checksum: "x-amz-checksum-crc32c (trailer)", New: flushMinioGoCRC32C},
		{Name: "minio-go+md5", Role: RolePeer, How: "minio-go with the body check that costs it least, as its options offer: `PutObject` with `SendContentMd5`, so the store refuses a damaged body by its MD5", Checksum: "content-md5", New: flushMinioGoMD5},
		{Name: "manager", Role: RolePeer, How: "one `manager.Uploader` (aws-sdk-go-v2, deprecated, still the most used) at its defaults; `Upload` of a `*bytes.Reader`", New: flushManager},
		{Name: "transfermanager", Role: RolePeer, How: "one `transfermanager.Client` at its defaults; `UploadObject` of a `*bytes.Reader`", Checksum: "x-amz-checksum-crc32", New: flushTransferManager},
		{Name: "s3.PutObject", Role: RolePeer, How: "one `s3.Client` at its defaults; `PutObject` of a `*bytes.Reader` with its ContentLength", New: flushPutObject},
	}
}

func flushImpl(name string) (FlushImpl, bool) {
	i := slices.IndexFunc(FlushImpls(), func(f FlushImpl) bool { return f.Name == name })
	if i < 0 {
		return FlushImpl{}, false
	}
	return FlushImpls()[i], true
}

func newAWSStore(srv s3test.Server) (store.Store, error) {
	return awss3.New(awss3.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, CABundle: srv.CABundle})
}

func newMinioStore(srv s3test.Server) (store.Store, error) {
	return miniogo.New(miniogo.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, CABundle: srv.CABundle})
}

// flushUploader is the one Uploader at its defaults that a safeput row's workers share.
func flushUploader(newStore func(s3test.Server) (store.Store, error), srv s3test.Server) (*writer.Uploader, error) {
	st, err := newStore(srv)
	if err != nil {
		return nil, err
	}
	return writer.NewUploader(st)
}

func flushSafeputUpload(newStore func(s3test.Server) (store.Store, error)) func(s3test.Server, string, Params) (FlushPut, error) {
	return func(srv s3test.Server, bucket string, _ Params) (FlushPut, error) {
		up, err := flushUploader(newStore, srv)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, key string, body []byte) (FlushNote, error) {
			res, err := up.Upload(ctx, bucket, key, bytes.NewReader(body))
			if err != nil {
				return FlushNote{}, err
			}
			return safeputNote(res, len(body))
		}, nil
	}
}

func flushSafeputWriter(newStore func(s3test.Server) (store.Store, error)) func(s3test.Server, string, Params) (FlushPut, error) {
	return func(srv s3test.Server, bucket string, _ Params) (FlushPut, error) {
		up, err := flushUploader(newStore, srv)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, key string, body []byte) (FlushNote, error) {
			w, err := up.New(ctx, bucket, key)
			if err != nil {
				return FlushNote{}, err
			}
			if _, err := w.Write(body); err != nil {
				_ = w.Abort(ctx)
				return FlushNote{}, err
			}
			if err := w.Close(); err != nil {
				return FlushNote{}, err
			}
			return safeputNote(w.Result(), len(body))
		}, nil
	}
}

// safeputNote checks a safeput Result against the body and says what it did.
func safeputNote(res *writer.Result, size int) (FlushNote, error) {
	if res == nil || res.Size != int64(size) || !res.VerifiedStrong {
		return FlushNote{}, fmt.Errorf("safeput reported %+v for %d bytes: want the size, verified strong", res, size)
	}
	by := string(res.Verified)
	if res.VerifiedBy != "" {
		by += " from " + res.VerifiedBy
	}
	return FlushNote{Requests: res.Requests, VerifiedBy: by}, nil
}

func flushMinioGo(srv s3test.Server, bucket string, p Params) (FlushPut, error) {
	return flushMinioGoWith(srv, bucket, p, minio.ChecksumNone, false)
}

// flushMinioGoMD5 is minio-go protecting the body without a checksum: Content-MD5, which every
// S3 store checks; it is the body check safeput's own rows are to be set beside.
func flushMinioGoMD5(srv s3test.Server, bucket string, p Params) (FlushPut, error) {
	return flushMinioGoWith(srv, bucket, p, minio.ChecksumNone, true)
}

// flushMinioGoCRC32C is minio-go verifying what it can: the store checks the CRC32C it sends in
// the trailer, and refuses a damaged body by it, as safeput's checksum header makes it do.
func flushMinioGoCRC32C(srv s3test.Server, bucket string, p Params) (FlushPut, error) {
	return flushMinioGoWith(srv, bucket, p, minio.ChecksumCRC32C, false)
}

func flushMinioGoWith(srv s3test.Server, bucket string, p Params, checksum minio.ChecksumType, contentMD5 bool) (FlushPut, error) {
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		return nil, err
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds: miniocreds.NewStaticV4(srv.AccessKey, srv.SecretKey, ""), Secure: u.Scheme == "https",
		Region: srv.Region, BucketLookup: minio.BucketLookupPath, TrailingHeaders: checksum != minio.ChecksumNone,
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, key string, body []byte) (FlushNote, error) {
		info, err := c.PutObject(ctx, bucket, key, bytes.NewReader(body), int64(len(body)),
			minio.PutObjectOptions{DisableContentSha256: p.Signing == SigningUnsigned, Checksum: checksum, SendContentMd5: contentMD5})
		if err != nil {
			return FlushNote{}, err
		}
		if info.Size != int64(len(body)) {
			return FlushNote{}, fmt.Errorf("minio-go reported %d bytes, body has %d", info.Size, len(body))
		}
		return FlushNote{}, nil
	}, nil
}

func flushManager(srv s3test.Server, bucket string, p Params) (FlushPut, error) {
	up := manager.NewUploader(awsClient(srv, p)) //nolint:staticcheck // SA1019: measured because it is still widely used
	return func(ctx context.Context, key string, body []byte) (FlushNote, error) {
		_, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}) //nolint:staticcheck // SA1019, see above
		return FlushNote{}, err
	}, nil
}

func flushTransferManager(srv s3test.Server, bucket string, p Params) (FlushPut, error) {
	tm := transfermanager.New(awsClient(srv, p))
	return func(ctx context.Context, key string, body []byte) (FlushNote, error) {
		_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
		return FlushNote{}, err
	}, nil
}

func flushPutObject(srv s3test.Server, bucket string, p Params) (FlushPut, error) {
	c := awsClient(srv, p)
	return func(ctx context.Context, key string, body []byte) (FlushNote, error) {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
		return FlushNote{}, err
	}, nil
}

// FlushLink is where the flush runs: straight to the server on loopback (Config zero), or
// through the benchmark's emulated link.
type FlushLink struct {
	Name   string
	Config link.Config // RTT 0: loopback, no relay
}

// Emulated reports whether the writes go through the relay.
func (l FlushLink) Emulated() bool { return l.Config.RTT > 0 || l.Config.Rate > 0 }

// LinkStarter starts a relay for lc (Upstream set) and returns its address and how to stop it.
// The benchmark command runs it in a process of its own, so the relay's CPU is not the client's.
type LinkStarter func(lc link.Config) (addr string, stop func() error, err error)

// InProcessLink runs the relay in this process (tests: its CPU then counts as the client's).
func InProcessLink(lc link.Config) (string, func() error, error) {
	r, err := link.Start(lc)
	if err != nil {
		return "", nil, err
	}
	return r.Addr(), r.Close, nil
}

// FlushConfig is a run of the flush workload on one server.
type FlushConfig struct {
	Server     s3test.Server
	ServerName string
	Bucket     string
	Links      []FlushLink
	Sizes      []int64
	Workers    int
	// Objects is the objects each timed batch writes on loopback, LinkObjects through the link;
	// either is cut so a batch moves at most BatchBytes (but at least four per worker).
	Objects, LinkObjects int
	BatchBytes           int64
	Runs                 int
	Impls                []string // empty: all of FlushImpls
	Params               Params   // Signing
	StartLink            LinkStarter
	TrashDir             string
	Log                  io.Writer
	// ProfileDir, when set, gets a CPU and an allocation profile of every timed batch.
	ProfileDir string
	// ServerPID, when set, is the server's process: its CPU time per object is recorded too.
	ServerPID int
}

// DefaultBatchBytes caps the bytes one timed batch writes.
const DefaultBatchBytes = 256 << 20

// objects is how many objects a batch of size writes over l.
func (cfg FlushConfig) objects(l FlushLink, size int64) int {
	n := cfg.Objects
	if l.Emulated() {
		n = cfg.LinkObjects
	}
	capBytes := cfg.BatchBytes
	if capBytes <= 0 {
		capBytes = DefaultBatchBytes
	}
	return max(min(n, int(capBytes/max(size, 1))), 4*cfg.Workers)
}

// FlushRecord is one timed batch: Objects objects of Size written by Workers workers sharing one
// client, each read back identical afterwards.
type FlushRecord struct {
	Link       string
	Impl       string
	Size       int64
	Run        int
	Objects    int
	Seconds    float64 // the batch's wall time
	CPUSeconds float64 // this process's user + system time during the batch
	// ServerCPUSeconds is the server process's user + system time during the batch (0 when not
	// watched).
	ServerCPUSeconds float64
	Allocated        uint64          // bytes the Go heap handed out during the batch
	Latencies        []time.Duration // one per object, from the call to its return
	Requests         int             // summed over the objects, where the uploader reports them (0 otherwise)
	VerifiedBy       map[string]int  // the evidence the uploader reported, counted
}

// flushBase is the bytes every object's body is a window of: a body starts at an offset given by
// its index, so objects differ from one another and each can be checked without being kept.
type flushBase struct {
	data []byte
	size int
}

const flushOffsets = 4096

func newFlushBase(size int64) flushBase {
	var seed [32]byte
	seed[0] = byte(size)
	b := make([]byte, int(size)+flushOffsets)
	_, _ = rand.NewChaCha8(seed).Read(b)
	return flushBase{data: b, size: int(size)}
}

func (b flushBase) body(i int) []byte {
	off := (i * 61) % flushOffsets
	return b.data[off : off+b.size]
}

// RunFlush runs the flush workload: for each link, size and run, every implementation writes a
// batch, in an order that starts one later each run, so drift in the machine's load falls on all
// alike. Each batch starts with one untimed object per worker (the connections of a client that
// has been running a while), then times the batch. Every object is read back and compared
// afterwards, then deleted; a write error or a difference ends the run with an error.
func RunFlush(ctx context.Context, cfg FlushConfig) ([]FlushRecord, error) {
	impls := cfg.Impls
	if len(impls) == 0 {
		for _, f := range FlushImpls() {
			impls = append(impls, f.Name)
		}
	}
	for _, n := range impls {
		if _, ok := flushImpl(n); !ok {
			return nil, fmt.Errorf("unknown flush implementation %q", n)
		}
	}
	if cfg.Runs < 1 || len(cfg.Sizes) == 0 || len(cfg.Links) == 0 || cfg.Workers < 1 || cfg.Objects < 1 || cfg.LinkObjects < 1 {
		return nil, errors.New("bench: the flush workload needs a run, a size, a link, a worker and an object count")
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	raw := cfg.Server.RawClient()
	if err := ensureBucket(ctx, raw, cfg.Bucket); err != nil {
		return nil, err
	}
	var recs []FlushRecord
	for _, l := range cfg.Links {
		r, err := flushOverLink(ctx, cfg, l, impls, raw, logw)
		recs = append(recs, r...)
		if err != nil {
			return recs, fmt.Errorf("%s: %w", l.Name, err)
		}
	}
	return recs, nil
}

func flushOverLink(ctx context.Context, cfg FlushConfig, l FlushLink, impls []string, raw *s3.Client, logw io.Writer) ([]FlushRecord, error) {
	via := cfg.Server
	if l.Emulated() {
		u, err := url.Parse(cfg.Server.Endpoint)
		if err != nil || u.Host == "" || u.Scheme != "http" {
			return nil, fmt.Errorf("endpoint %q: want http://host:port", cfg.Server.Endpoint)
		}
		lc := l.Config
		lc.Upstream = u.Host
		start := cfg.StartLink
		if start == nil {
			start = InProcessLink
		}
		addr, stop, err := start(lc)
		if err != nil {
			return nil, err
		}
		defer func() { _ = stop() }()
		via.Endpoint = "http://" + addr
	}
	// One client per implementation for the whole link: a long-lived client, as a flush node has.
	puts := map[string]FlushPut{}
	for _, n := range impls {
		im, _ := flushImpl(n)
		put, err := im.New(via, cfg.Bucket, cfg.Params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		puts[n] = put
	}
	var recs []FlushRecord
	for _, size := range cfg.Sizes {
		base := newFlushBase(size)
		n := cfg.objects(l, size)
		for run := range cfg.Runs {
			for i := range impls {
				name := impls[(i+run)%len(impls)]
				profile := ""
				if cfg.ProfileDir != "" {
					profile = filepath.Join(cfg.ProfileDir, strings.NewReplacer("/", "_", " ", "").Replace(fmt.Sprintf("flush-%s-%s-%s-run%d.pprof", l.Name, bytesize.Format(size), name, run+1)))
				}
				rec, err := flushBatch(ctx, puts[name], base, cfg.Workers, n, fmt.Sprintf("flush/%s/%d/run%d", name, size, run), profile, cfg.ServerPID)
				if err != nil {
					return recs, fmt.Errorf("%s, %s: %w", name, bytesize.Format(size), err)
				}
				rec.Link, rec.Impl, rec.Size, rec.Run = l.Name, name, size, run
				if err := flushCheck(ctx, raw, cfg.Bucket, rec.keyPrefix(), base, cfg.Workers, n, cfg.TrashDir); err != nil {
					return recs, fmt.Errorf("%s, %s: %w", name, bytesize.Format(size), err)
				}
				recs = append(recs, rec)
				p50, p99 := rec.percentiles()
				_, _ = fmt.Fprintf(logw, "flush %-10s %-8s run %d  %-22s %5d objects %7.3f s  %7.1f objects/s  p50 %6.1f ms  p99 %6.1f ms  CPU %6.3f ms/object  read back ok\n",
					l.Name, bytesize.Format(size), run+1, name, n, rec.Seconds, float64(n)/rec.Seconds, ms(p50), ms(p99), 1e3*rec.CPUSeconds/float64(n))
			}
		}
	}
	return recs, nil
}

func (r FlushRecord) keyPrefix() string {
	return fmt.Sprintf("flush/%s/%d/run%d", r.Impl, r.Size, r.Run)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// flushBatch writes one untimed object per worker, then n timed ones, workers at a time, each
// worker taking the next index as it finishes one.
func flushBatch(ctx context.Context, put FlushPut, base flushBase, workers, n int, prefix, profile string, serverPID int) (FlushRecord, error) {
	rec := FlushRecord{Objects: n, Latencies: make([]time.Duration, n), VerifiedBy: map[string]int{}}
	var mu sync.Mutex
	run := func(count int, key func(int) string, timed bool) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= count || ctx.Err() != nil {
						return
					}
					t0 := time.Now()
					note, err := put(ctx, key(i), base.body(i))
					d := time.Since(t0)
					if err != nil {
						errs <- fmt.Errorf("%s: %w", key(i), err)
						return
					}
					if timed {
						rec.Latencies[i] = d
						mu.Lock()
						rec.Requests += note.Requests
						if note.VerifiedBy != "" {
							rec.VerifiedBy[note.VerifiedBy]++
						}
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return errors.Join(<-errs, ctx.Err())
	}
	if err := run(workers, func(i int) string { return fmt.Sprintf("%s/warm-%d", prefix, i) }, false); err != nil {
		return rec, err
	}
	runtime.GC() // the garbage of what ran before is not this batch's
	stopProfile := func() {}
	if profile != "" {
		stop, err := startProfile(profile)
		if err != nil {
			return rec, err
		}
		stopProfile = stop
	}
	cpu0, alloc0, srv0 := selfCPU(), heapAllocated(), procCPU(serverPID)
	t0 := time.Now()
	err := run(n, func(i int) string { return fmt.Sprintf("%s/%d", prefix, i) }, true)
	rec.Seconds = time.Since(t0).Seconds()
	rec.CPUSeconds = (selfCPU() - cpu0).Seconds()
	if srv1 := procCPU(serverPID); srv0 >= 0 && srv1 >= 0 {
		rec.ServerCPUSeconds = srv1 - srv0
	}
	rec.Allocated = heapAllocated() - alloc0
	stopProfile()
	return rec, err
}

// selfCPU is this process's user + system time, all threads.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// flushCheck reads back every object of a batch (the warm-up's included) straight from the
// server, compares it with its body, and deletes it.
func flushCheck(ctx context.Context, raw *s3.Client, bucket, prefix string, base flushBase, workers, n int, trash string) error {
	var keys []string
	var bodies [][]byte
	for i := range workers {
		keys, bodies = append(keys, fmt.Sprintf("%s/warm-%d", prefix, i)), append(bodies, base.body(i))
	}
	for i := range n {
		keys, bodies = append(keys, fmt.Sprintf("%s/%d", prefix, i)), append(bodies, base.body(i))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) {
					return
				}
				if err := readBackEqual(ctx, raw, bucket, keys[i], bodies[i]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	for chunk := range slices.Chunk(keys, 1000) {
		ids := make([]s3types.ObjectIdentifier, len(chunk))
		for i, k := range chunk {
			ids[i] = s3types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := raw.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("delete the batch: %w", err)
		}
		if len(out.Errors) > 0 {
			return fmt.Errorf("delete the batch: %d keys not deleted, first %s: %s", len(out.Errors), aws.ToString(out.Errors[0].Key), aws.ToString(out.Errors[0].Message))
		}
	}
	if err := emptyDir(trash); err != nil {
		return fmt.Errorf("emptying the server's trash: %w", err)
	}
	return nil
}

func readBackEqual(ctx context.Context, raw *s3.Client, bucket, key string, want []byte) error {
	out, err := raw.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("read back %s: %w", key, err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if err != nil {
		return fmt.Errorf("read back %s: %w", key, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%w: %s has %d bytes, its body %d", ErrMismatch, key, len(got), len(want))
	}
	return nil
}

// percentiles are the batch's median and 99th-percentile latency.
func (r FlushRecord) percentiles() (p50, p99 time.Duration) {
	return percentile(r.Latencies, 0.50), percentile(r.Latencies, 0.99)
}

// percentile is the nearest-rank q-quantile of d.
func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// flushRow is one implementation at one link and size.
type flushRow struct {
	impl             string
	role             Role
	objects          int
	rate             float64 // objects/s, median of the runs
	rateMin, rateMax float64
	p50, p99         time.Duration // over every timed object of the runs
	cpuMS            float64       // CPU ms per object, median of the runs
	serverCPUMS      float64       // the server's, likewise (0: not watched)
	allocKiB         float64       // KiB allocated per object, median of the runs
	requests         float64       // per object, where the uploader reports them
	verifiedBy       []string      // the evidence reported, most frequent first
	vsBest           float64       // objects/s over the fastest peer's
	hasBest          bool
	checksBody       bool // its PutObject carries a body check (FlushImpl.Checksum)
	// objects/s over the fastest peer's whose PutObject carries a body check (a checksum or
	// Content-MD5), as safeput's does: the price of that check is then on both sides.
	vsChecked  float64
	hasChecked bool
	// The targets against the fastest peer: objects/s, CPU per object, p99.
	rateMet, cpuMet, p99Met bool
}

func flushRows(recs []FlushRecord, linkName string, size int64) []flushRow {
	by := map[string][]FlushRecord{}
	for _, r := range recs {
		if r.Link == linkName && r.Size == size {
			by[r.Impl] = append(by[r.Impl], r)
		}
	}
	var rows []flushRow
	for _, im := range FlushImpls() {
		rs := by[im.Name]
		if len(rs) == 0 {
			continue
		}
		row := flushRow{impl: im.Name, role: im.Role, objects: rs[0].Objects, checksBody: im.Checksum != ""}
		var rates, cpus, srvs, allocs []float64
		var lat []time.Duration
		var reqs, objs int
		seen := map[string]int{}
		for _, r := range rs {
			rates = append(rates, float64(r.Objects)/r.Seconds)
			cpus = append(cpus, 1e3*r.CPUSeconds/float64(r.Objects))
			srvs = append(srvs, 1e3*r.ServerCPUSeconds/float64(r.Objects))
			allocs = append(allocs, float64(r.Allocated)/1024/float64(r.Objects))
			lat = append(lat, r.Latencies...)
			reqs += r.Requests
			objs += r.Objects
			for k, v := range r.VerifiedBy {
				seen[k] += v
			}
		}
		row.rate, row.rateMin, row.rateMax = median(rates), slices.Min(rates), slices.Max(rates)
		row.cpuMS, row.serverCPUMS, row.allocKiB = median(cpus), median(srvs), median(allocs)
		row.p50, row.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
		if reqs > 0 {
			row.requests = float64(reqs) / float64(objs)
		}
		for k := range seen {
			row.verifiedBy = append(row.verifiedBy, k)
		}
		sort.Slice(row.verifiedBy, func(i, j int) bool { return seen[row.verifiedBy[i]] > seen[row.verifiedBy[j]] })
		rows = append(rows, row)
	}
	best, checked := -1, -1
	for i, r := range rows {
		if r.role == RolePeer && (best < 0 || r.rate > rows[best].rate) {
			best = i
		}
		if r.role == RolePeer && r.checksBody && (checked < 0 || r.rate > rows[checked].rate) {
			checked = i
		}
	}
	if checked >= 0 {
		for i := range rows {
			rows[i].hasChecked, rows[i].vsChecked = true, rows[i].rate/rows[checked].rate
		}
	}
	if best < 0 {
		return rows
	}
	b := rows[best]
	for i := range rows {
		r := &rows[i]
		r.hasBest, r.vsBest = true, r.rate/b.rate
		r.rateMet = r.vsBest >= TargetDefaultsPeerRatio
		r.cpuMet = r.cpuMS <= b.cpuMS
		r.p99Met = r.p99 <= b.p99
	}
	return rows
}

// FlushEnv is what the flush section says about its run.
type FlushEnv struct {
	Command, Date, Versions, ServerName string
	Machine, Load                       string
	Workers                             int
	Runs                                int
	Signing                             Signing
	Links                               []FlushLink
	CLI                                 *CLIRow // nil: the CLI row was not measured
}

// FlushMarkdown renders the flush section: per link and size, each uploader's objects per
// second, latency, client CPU and allocation per object, against the best peer's, and the
// targets each safeput row meets.
func FlushMarkdown(env FlushEnv, recs []FlushRecord) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## A flush of small objects\n\n")
	w("Generated by `%s` on %s (%s).\n\n", env.Command, env.Date, env.Versions)
	if env.Machine != "" {
		w("Machine: %s; load average (1/5/15 min) at start → end: %s. Client, server (and the link's relay) share its cores.\n\n", env.Machine, env.Load)
	}
	w("- **Workload**: %d workers share one client and write distinct keys, each taking the next object as it finishes one, as a flush node writes binlogs, stats and index shards; a batch is the number of objects each table gives, after one untimed object per worker (the client's connections are those of a client that has been running). Every object is read back from the server and compared with its body after the batch, then deleted (outside the timing). Each implementation's client is made once per link and kept; the order of the implementations starts one later in each run, so drift in load falls on all alike. %d run(s) per row.\n", env.Workers, env.Runs)
	w("- **Where**: %s, against %s.\n", flushLinksDesc(env.Links), env.ServerName)
	w("- **Uploaders**, each at its own defaults (nothing set but the endpoint, credentials and path-style addressing):\n")
	for _, im := range FlushImpls() {
		w("  - %s: %s.\n", im.Name, im.How)
	}
	if env.Signing == SigningUnsigned {
		w("  Peers send UNSIGNED-PAYLOAD, as over TLS (see Method).\n")
	}
	w("- **Integrity**: safeput verifies every object at its defaults: its single PUT is proven by the PutObject answer (the ETag equals the MD5 of the body computed here, no Content-MD5 sent) and otherwise by a HEAD (\"verified\" says which, counted over the objects); it also sends a checksum header, which a store that checks it refuses a damaged body by. The checksum header each PutObject carries, as seen on the wire: %s. No peer compares anything after its write.\n", flushChecksums())
	w("- **Columns**: objects/s is the batch's objects over its wall time (median of the runs, min–max beside it); p50 and p99 are the latency of one object (its call to its return) over every timed object of the runs; CPU is this process's user + system time during the batch per object (the relay runs in a process of its own), server CPU the server process's (/proc/PID/stat, 10 ms ticks); alloc is what the Go heap handed out during the batch per object; requests is what safeput's Result counted per object. \"× best peer\" is the row's objects/s over the fastest peer's; \"× best checked peer\" over the fastest peer's whose PutObject carries a body check (a checksum or Content-MD5, so the store refuses a damaged body), as safeput's does. The targets are against the fastest peer, checked or not.\n")
	w("- **Targets** for each safeput row (reported, never asserted): objects/s ≥ %.1f× the fastest peer's, CPU per object ≤ that peer's, p99 ≤ that peer's.\n\n", TargetDefaultsPeerRatio)
	var misses []string
	for _, l := range env.Links {
		sizes := []int64{}
		for _, r := range recs {
			if r.Link == l.Name && !slices.Contains(sizes, r.Size) {
				sizes = append(sizes, r.Size)
			}
		}
		slices.Sort(sizes)
		for _, size := range sizes {
			rows := flushRows(recs, l.Name, size)
			if len(rows) == 0 {
				continue
			}
			w("### %s, %s objects × %d\n\n", l.Name, bytesize.Format(size), rows[0].objects)
			w("| implementation | objects/s | min–max | p50 ms | p99 ms | CPU ms/object | server CPU ms/object | alloc KiB/object | requests/object | × best peer | × best checked peer | targets | verified |\n")
			w("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|\n")
			for _, r := range rows {
				ratio, checked, targets := "–", "–", ""
				if r.hasBest {
					ratio = fmt.Sprintf("%.2f×", r.vsBest)
				}
				if r.hasChecked {
					checked = fmt.Sprintf("%.2f×", r.vsChecked)
				}
				if r.role == RoleSafeput && r.hasBest {
					targets = flushTargets(r)
					if !r.rateMet || !r.cpuMet || !r.p99Met {
						misses = append(misses, fmt.Sprintf("%s %s %s", l.Name, bytesize.Format(size), r.impl))
					}
				}
				reqs := "–"
				if r.requests > 0 {
					reqs = fmt.Sprintf("%.2f", r.requests)
				}
				srv := "–"
				if r.serverCPUMS > 0 {
					srv = fmt.Sprintf("%.3f", r.serverCPUMS)
				}
				w("| %s | %.0f | %.0f–%.0f | %.1f | %.1f | %.3f | %s | %.0f | %s | %s | %s | %s | %s |\n", r.impl, r.rate, r.rateMin, r.rateMax, ms(r.p50), ms(r.p99),
					r.cpuMS, srv, r.allocKiB, reqs, ratio, checked, targets, strings.Join(r.verifiedBy, "; "))
			}
			w("\n")
		}
	}
	if len(misses) == 0 {
		w("Every safeput row met its three targets in this run.\n\n")
	} else {
		w("Rows that missed a target in this run (✗ above): %s.\n\n", strings.Join(misses, ", "))
	}
	if env.CLI != nil {
		b.WriteString(env.CLI.Markdown())
	}
	return b.String()
}

// flushChecksums lists the checksum header each implementation's PutObject carries.
func flushChecksums() string {
	var parts []string
	for _, im := range FlushImpls() {
		c := "none"
		if im.Checksum != "" {
			c = "`" + im.Checksum + "`"
		}
		parts = append(parts, im.Name+" "+c)
	}
	return strings.Join(parts, ", ")
}

// flushTargets marks a safeput row's three targets: rate, CPU, p99.
func flushTargets(r flushRow) string {
	mark := func(ok bool) string {
		if ok {
			return "✓"
		}
		return "✗"
	}
	return fmt.Sprintf("rate %s, CPU %s, p99 %s", mark(r.rateMet), mark(r.cpuMet), mark(r.p99Met))
}

func flushLinksDesc(links []FlushLink) string {
	var parts []string
	for _, l := range links {
		if !l.Emulated() {
			parts = append(parts, "**"+l.Name+"** (straight to the server)")
			continue
		}
		parts = append(parts, fmt.Sprintf("**%s** (the benchmark's relay, `bench/internal/link`, in a process of its own: %s round trip, %s shared, %s in flight per connection and direction, as in the WAN section)",
			l.Name, l.Config.RTT, FormatRate(l.Config.Rate), bytesize.Format(l.Config.Window)))
	}
	return strings.Join(parts, " and ")
}

// The flush section sits between these markers, so a flush run replaces only it.
const (
	FlushBegin = "<!-- flush:begin (generated by scripts/bench.sh with FLUSH_ONLY=1) -->"
	FlushEnd   = "<!-- flush:end -->"
)

// CutFlush returns doc without its flush block (markers included) and the block's content.
func CutFlush(doc string) (rest, section string) {
	i := strings.Index(doc, FlushBegin)
	j := strings.Index(doc, FlushEnd)
	if i < 0 || j < i {
		return doc, ""
	}
	end := j + len(FlushEnd)
	if end < len(doc) && doc[end] == '\n' {
		end++
	}
	return doc[:i] + doc[end:], strings.TrimPrefix(doc[i+len(FlushBegin):j], "\n")
}

// SpliceFlush puts section between the markers in doc, replacing what was there, or appends the
// block when doc has none.
func SpliceFlush(doc, section string) string {
	return spliceBetween(doc, FlushBegin, FlushEnd, strings.TrimRight(section, "\n")+"\n")
}
