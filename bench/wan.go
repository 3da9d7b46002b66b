package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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

// WANImpl is one uploader measured over the emulated link, at its own defaults: no part size,
// concurrency or threshold set, as a user who configures nothing runs it.
type WANImpl struct {
	Name string
	Role Role
	New  func(srv s3test.Server, bucket string, p Params) (Uploader, error)
}

// WANImpls lists the WAN section's uploaders in the order its tables list them.
func WANImpls() []WANImpl {
	return []WANImpl{
		{Name: "safeput-defaults/aws", Role: RoleSafeput, New: newWANSafeputAWS},
		{Name: "safeput-defaults/minio", Role: RoleSafeput, New: newWANSafeputMinio},
		{Name: "safeput-cli", Role: RoleSafeput, New: newWANSafeputCLI},
		{Name: "safeput-cached/aws", Role: RoleSafeput, New: newWANSafeputCached},
		{Name: "transfermanager", Role: RolePeer, New: newWANTransferManager},
		{Name: "manager", Role: RolePeer, New: newWANManager},
		{Name: "minio-go", Role: RolePeer, New: newWANMinioGo},
	}
}

func wanImpl(name string) (WANImpl, bool) {
	i := slices.IndexFunc(WANImpls(), func(w WANImpl) bool { return w.Name == name })
	if i < 0 {
		return WANImpl{}, false
	}
	return WANImpls()[i], true
}

func newWANSafeputAWS(srv s3test.Server, bucket string, _ Params) (Uploader, error) {
	st, err := awss3.New(awss3.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true})
	if err != nil {
		return nil, err
	}
	return safeputUploaderWith(st, bucket, nil)
}

func newWANSafeputMinio(srv s3test.Server, bucket string, _ Params) (Uploader, error) {
	st, err := miniogo.New(miniogo.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true})
	if err != nil {
		return nil, err
	}
	return safeputUploaderWith(st, bucket, nil)
}

// newWANSafeputCached is safeput-defaults/aws with Options.EndpointCache, a directory an earlier
// write to the server filled (one untimed multipart write through another Uploader, once per
// benchmark run), as a service that restarts with its cache, or the CLI's second run, has: the
// Uploader starts knowing whether the server checks part checksums, so it sends no probe, and a
// single PUT whose answer echoes the checksum needs no HEAD (writer.SaveRereads). Its client and
// connections are as fresh as every other row's.
func newWANSafeputCached(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	if p.CLICacheDir == "" {
		return nil, errors.New("safeput-cached needs the run's cache directory (Params.CLICacheDir)")
	}
	dir := filepath.Join(p.CLICacheDir, "safeput-cached")
	cache := func(o *writer.Options) { o.EndpointCache = dir }
	newStore := func() (store.Store, error) {
		return awss3.New(awss3.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true})
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := fillEndpointCache(newStore, bucket, cache); err != nil {
			return nil, fmt.Errorf("safeput-cached: filling its endpoint cache: %w", err)
		}
	}
	st, err := newStore()
	if err != nil {
		return nil, err
	}
	return safeputUploaderWith(st, bucket, []func(*writer.Options){cache})
}

// fillEndpointCache makes one multipart write (its probe learns the endpoint) through an Uploader
// of its own with the cache, and deletes the object.
func fillEndpointCache(newStore func() (store.Store, error), bucket string, cache func(*writer.Options)) error {
	st, err := newStore()
	if err != nil {
		return err
	}
	u, err := writer.NewUploader(st, cache)
	if err != nil {
		return err
	}
	ctx := context.Background()
	const key = "wan/safeput-cached-warm-up"
	body := make([]byte, writer.DefaultPartSize+1) // two parts: a multipart write, which probes
	if _, err := u.Upload(ctx, bucket, key, bytes.NewReader(body)); err != nil {
		return err
	}
	return st.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: bucket, Key: key})
}

// newWANSafeputCLI is the CLI with no --part-size or --concurrency: its own defaults.
func newWANSafeputCLI(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	p.PartSize, p.Concurrency = writer.DefaultPartSize, writer.DefaultConcurrency
	return newSafeputCLI(srv, bucket, p)
}

func newWANTransferManager(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	tm := transfermanager.New(awsClient(srv, p))
	return func(ctx context.Context, key string, src Source) (string, error) {
		_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: src.Reader})
		return "", err
	}, nil
}

func newWANManager(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	up := manager.NewUploader(awsClient(srv, p)) //nolint:staticcheck // SA1019: measured because it is still widely used
	return func(ctx context.Context, key string, src Source) (string, error) {
		_, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: src.Reader}) //nolint:staticcheck // SA1019, see above
		return "", err
	}, nil
}

func newWANMinioGo(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		return nil, err
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds: miniocreds.NewStaticV4(srv.AccessKey, srv.SecretKey, ""), Secure: u.Scheme == "https",
		Region: srv.Region, BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, key string, src Source) (string, error) {
		info, err := c.PutObject(ctx, bucket, key, src.Reader, src.Size, minio.PutObjectOptions{DisableContentSha256: p.Signing == SigningUnsigned})
		if err != nil {
			return "", err
		}
		if info.Size != src.Size {
			return "", fmt.Errorf("minio-go reported %d bytes, source has %d", info.Size, src.Size)
		}
		return "", nil
	}, nil
}

// WANConfig is a run of the WAN section on one server.
type WANConfig struct {
	Server     s3test.Server // the server itself; uploads reach it through the relay
	ServerName string
	Bucket     string
	Link       link.Config // Upstream is set from Server
	Sizes      []int64
	Runs       int
	Impls      []string // empty: all of WANImpls (safeput-cli only with Params.CLI)
	Params     Params   // Signing, CLI and CLICacheDir; part size and concurrency are each uploader's own
	Dir        string
	TrashDir   string
	Log        io.Writer
	Trace      io.Writer // when set, gets every request line the relay carries
}

// WANRecord is one write over the link that read back identical to its source.
type WANRecord struct {
	Impl        string
	Size        int64
	Run         int
	Seconds     float64
	RoundTrips  int64          // the relay's turns during the write
	Connections int64          // connections the write opened
	Requests    string         // the S3 requests the relay carried, summarised (Requests)
	Ops         map[string]int // the same, counted (OpCounts)
	Note        string
}

// RunWAN writes every size through every uploader Runs times over an emulated link, each
// write on a cold connection: a fresh client (its own transport) per write, and the relay's
// connections closed before it. Rounds are round-robin, as in Run.
func RunWAN(ctx context.Context, cfg WANConfig) ([]WANRecord, error) {
	impls := cfg.Impls
	if len(impls) == 0 {
		for _, w := range WANImpls() {
			if w.Name == "safeput-cli" && cfg.Params.CLI == "" {
				continue
			}
			impls = append(impls, w.Name)
		}
	}
	for _, n := range impls {
		if _, ok := wanImpl(n); !ok {
			return nil, fmt.Errorf("unknown WAN implementation %q", n)
		}
	}
	if cfg.Runs < 1 || len(cfg.Sizes) == 0 {
		return nil, errors.New("bench: the WAN section needs at least one run and size")
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	u, err := url.Parse(cfg.Server.Endpoint)
	if err != nil || u.Host == "" || u.Scheme != "http" {
		return nil, fmt.Errorf("WAN: endpoint %q: want http://host:port", cfg.Server.Endpoint)
	}
	lc := cfg.Link
	lc.Upstream = u.Host
	turns := &turnLog{trace: cfg.Trace}
	lc.OnTurn = turns.add
	if cfg.Trace != nil {
		lc.OnDeliver = turns.carried
	}
	relay, err := link.Start(lc)
	if err != nil {
		return nil, err
	}
	defer func() { _ = relay.Close() }()
	via := cfg.Server
	via.Endpoint = "http://" + relay.Addr()

	raw := cfg.Server.RawClient()
	if err := ensureBucket(ctx, raw, cfg.Bucket); err != nil {
		return nil, err
	}
	var recs []WANRecord
	for _, size := range cfg.Sizes {
		data, err := Generate(cfg.Dir, size)
		if err != nil {
			return recs, fmt.Errorf("generate %s: %w", bytesize.Format(size), err)
		}
		for run := range cfg.Runs {
			for i := range impls {
				name := impls[(i+run)%len(impls)]
				rec, err := wanOnce(ctx, cfg, relay, turns, via, raw, name, data, run)
				if err != nil {
					_ = os.Remove(data.Path)
					return recs, fmt.Errorf("%s, %s: %w", name, bytesize.Format(size), err)
				}
				recs = append(recs, rec)
				_, _ = fmt.Fprintf(logw, "wan %-9s %-8s run %d  %-22s %8.3f s  %3d round trips  %2d connections  read back ok  %s\n",
					cfg.ServerName, bytesize.Format(size), run+1, name, rec.Seconds, rec.RoundTrips, rec.Connections, rec.Note)
			}
		}
		_ = os.Remove(data.Path)
	}
	return recs, nil
}

func wanOnce(ctx context.Context, cfg WANConfig, relay *link.Relay, turns *turnLog, via s3test.Server, raw *s3.Client, name string, data DataFile, run int) (WANRecord, error) {
	im, _ := wanImpl(name)
	up, err := im.New(via, cfg.Bucket, cfg.Params)
	if err != nil {
		return WANRecord{}, err
	}
	relay.CloseConns() // the previous writer's idle connections, and any New made: this write starts cold
	src, closer, err := Open(data.Path, data.Size, SourceReaderAt)
	if err != nil {
		return WANRecord{}, err
	}
	defer closer.Close()
	key := fmt.Sprintf("wan/%s/%d/run%d", name, data.Size, run)
	before := relay.Stats()
	turns.reset()
	start := time.Now()
	note, err := up(ctx, key, src)
	secs := time.Since(start).Seconds()
	d := relay.Stats().Sub(before)
	turns.printCarried()
	lines := turns.lines()
	reqs, ops := Requests(lines), OpCounts(lines)
	if err != nil {
		return WANRecord{}, err
	}
	// The check and the delete go to the server directly: they are not the write's round trips.
	if err := CheckObject(ctx, raw, cfg.Bucket, key, data); err != nil {
		return WANRecord{}, err
	}
	if _, err := raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(cfg.Bucket), Key: aws.String(key)}); err != nil {
		return WANRecord{}, fmt.Errorf("delete %s: %w", key, err)
	}
	if err := emptyDir(cfg.TrashDir); err != nil {
		return WANRecord{}, fmt.Errorf("emptying the server's trash: %w", err)
	}
	return WANRecord{Impl: name, Size: data.Size, Run: run, Seconds: secs, RoundTrips: d.RoundTrips, Connections: d.Connections, Requests: reqs, Ops: ops, Note: note}, nil
}

// turnLog keeps the request lines of the write under way and, when tracing, the bytes the link
// carried toward the server in each tenth of a second.
type turnLog struct {
	trace  io.Writer
	mu     sync.Mutex
	turns  []string
	tenths []int64
}

// carriedStep is the tenth of a second the trace sums the carried bytes over.
const carriedStep = 100 * time.Millisecond

func (l *turnLog) carried(at time.Duration, n int) {
	i := int(at / carriedStep)
	if i < 0 || i >= 6000 { // bounded: ten minutes of a write
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.tenths) <= i {
		l.tenths = append(l.tenths, 0)
	}
	l.tenths[i] += int64(n)
}

// printCarried writes the write's carried bytes per tenth of a second to the trace: a link kept
// full shows the same figure in every tenth but the first and last.
func (l *turnLog) printCarried() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.trace == nil || len(l.tenths) == 0 {
		return
	}
	var b strings.Builder
	for _, n := range l.tenths {
		fmt.Fprintf(&b, " %.1f", float64(n)/1e6)
	}
	_, _ = fmt.Fprintf(l.trace, "link: MB carried toward the server per %v:%s\n", carriedStep, b.String())
}

func (l *turnLog) add(t link.Turn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.turns) < 1<<16 { // bounded: a write of 512 MiB makes a few hundred
		l.turns = append(l.turns, t.Line)
	}
	if l.trace != nil {
		_, _ = fmt.Fprintln(l.trace, "link:", t)
	}
}

func (l *turnLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns = l.turns[:0]
	l.tenths = l.tenths[:0]
}

func (l *turnLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.turns)
}

// Requests summarises a write's client turns (request lines, "" for a body sent after the
// server's 100 Continue) as S3 operations in the order each first appeared, e.g.
// "CreateMultipartUpload, 5 UploadPart (4 parts), 4 100-continue, ListParts,
// CompleteMultipartUpload, HEAD". More UploadParts than parts (a part number of an upload) are
// a part sent twice: a retry.
func Requests(lines []string) string {
	var order []string
	count := map[string]int{}
	parts := map[string]bool{}
	for _, l := range lines {
		op := s3Op(l)
		if op == "UploadPart" {
			if n, ok := uploadPart(l); ok {
				parts[n] = true
			}
		}
		if count[op] == 0 {
			order = append(order, op)
		}
		count[op]++
	}
	out := make([]string, 0, len(order))
	for _, op := range order {
		s := op
		if n := count[op]; n > 1 {
			s = fmt.Sprintf("%d %s", n, op)
		}
		if op == "UploadPart" && len(parts) != count[op] {
			s += fmt.Sprintf(" (%d parts)", len(parts))
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// opRepeatedPart counts UploadParts of a part number already sent in the same upload (OpCounts).
const opRepeatedPart = "UploadPart repeated"

// uploadPart names an UploadPart request line's part: its upload id and part number.
func uploadPart(line string) (string, bool) {
	u, err := url.Parse(requestTarget(line))
	if err != nil {
		return "", false
	}
	q := u.Query()
	return q.Get("uploadId") + " " + q.Get("partNumber"), true
}

// OpCounts counts a write's client turns by S3 operation (s3Op); UploadParts of a part number
// already sent in the same upload count as opRepeatedPart, not UploadPart.
func OpCounts(lines []string) map[string]int {
	count := map[string]int{}
	parts := map[string]bool{}
	for _, l := range lines {
		op := s3Op(l)
		if op == "UploadPart" {
			if n, ok := uploadPart(l); ok {
				if parts[n] {
					op = opRepeatedPart
				}
				parts[n] = true
			}
		}
		count[op]++
	}
	return count
}

// whyOp says what a request that safeput makes and the fastest peer does not is for, and
// whether it adds evidence about the object written.
var whyOp = map[string]string{
	"HEAD":                    "the verifying HEAD: the object's length and checksum as the server stores them, read after Complete or PutObject answered; the write's evidence. A single PUT goes without it, a fresh Uploader's and the CLI's first included, when its answer proves the object (`writer.SaveRereads`): its ETag is the MD5 of the body, or it echoes the checksum sent and the Uploader knows the server checks checksums",
	"ListParts":               "the parts as the server holds them (sizes, checksums) checked against what was sent, before Complete",
	opRepeatedPart:            "a part sent twice in its upload: a retry",
	"AbortMultipartUpload":    "the end of the endpoint probe: safeput's first multipart write to a server asks, in a multipart upload of its own on the key (a second CreateMultipartUpload, one tiny UploadPart with a wrong checksum, which the server must refuse, to learn whether it checks part checksums), and aborts it; evidence about the endpoint, not the object, never in the write's own upload",
	"100-continue":            "the body held back until the server's 100 Continue: Expect: 100-continue, the AWS SDK's default for bodies of 2 MiB and more; no evidence",
	"CreateMultipartUpload":   "multipart where the peer sent one request; a second is the endpoint probe's own upload (see AbortMultipartUpload)",
	"CompleteMultipartUpload": "multipart where the peer sent one request",
	"UploadPart":              "more, smaller parts",
}

// extraTurns describes the requests safeput's row made beyond the fastest peer's, by kind, as
// the runs with the median times made them; "" when it made none.
func extraTurns(mine, peer map[string]int) string {
	var ops []string
	for op, n := range mine {
		if n > peer[op] {
			ops = append(ops, op)
		}
	}
	slices.Sort(ops)
	var out []string
	for _, op := range ops {
		out = append(out, fmt.Sprintf("+%d %s", mine[op]-peer[op], op))
	}
	return strings.Join(out, ", ")
}

// extraOps lists the kinds of request extraTurns names for rows, sorted.
func extraOps(rows []wanRow) []string {
	var peer map[string]int
	best := -1.0
	for _, r := range rows {
		if r.role == RolePeer && r.median > 0 && (best < 0 || r.median < best) {
			best, peer = r.median, r.ops
		}
	}
	var ops []string
	if best < 0 {
		return nil
	}
	for _, r := range rows {
		if r.role != RoleSafeput {
			continue
		}
		for op, n := range r.ops {
			if n > peer[op] && !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// requestTarget is the path and query of a request line ("PUT /b/k?x HTTP/1.1" → "/b/k?x").
func requestTarget(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// s3Op names the S3 operation of a path-style request line.
func s3Op(line string) string {
	if line == "" {
		return "100-continue"
	}
	method, _, _ := strings.Cut(line, " ")
	u, err := url.Parse(requestTarget(line))
	if err != nil {
		return method
	}
	q := u.Query()
	_, uploads := q["uploads"]
	_, uploadID := q["uploadId"]
	switch {
	case method == "POST" && uploads:
		return "CreateMultipartUpload"
	case method == "PUT" && uploadID && q.Has("partNumber"):
		return "UploadPart"
	case method == "PUT":
		return "PutObject"
	case method == "GET" && uploadID:
		return "ListParts"
	case method == "POST" && uploadID:
		return "CompleteMultipartUpload"
	case method == "DELETE" && uploadID:
		return "AbortMultipartUpload"
	case method == "HEAD":
		return "HEAD"
	case method == "GET" && q.Has("location"):
		return "GetBucketLocation"
	}
	return method + " " + u.Path
}

// WANEnv is what the section says about its run.
type WANEnv struct {
	Command, Date, Versions, ServerName string
	Title                               string // the section's heading ("" for the WAN section's own)
	Machine, Load                       string // the load average before → after, as the other sections give it
	Link                                link.Config
	Runs                                int
	Signing                             Signing
}

// ParseRate reads a link rate in bits per second, decimal as links are rated: "1Gbit",
// "100Mbit", "500kbit" or a plain number of bits; it returns bytes per second.
func ParseRate(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}, {"Kbit", 1e3}, {"bit", 1}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = v, u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("rate %q: want e.g. 1Gbit or 100Mbit", s)
	}
	return int64(f * float64(mult) / 8), nil
}

// FormatRate is ParseRate's inverse for the report (bytes per second in, bits out).
func FormatRate(bytesPerSec int64) string {
	bits := float64(bytesPerSec) * 8
	switch {
	case bits >= 1e9:
		return strconv.FormatFloat(bits/1e9, 'f', -1, 64) + " Gbit/s"
	case bits >= 1e6:
		return strconv.FormatFloat(bits/1e6, 'f', -1, 64) + " Mbit/s"
	}
	return strconv.FormatFloat(bits/1e3, 'f', -1, 64) + " kbit/s"
}

// wanRow is one uploader at one size.
type wanRow struct {
	impl        string
	role        Role
	median      float64
	rtMin       int64
	rtMax       int64
	connMin     int64
	connMax     int64
	runs        int
	requests    []string       // each distinct summary, in run order
	ops         map[string]int // the median run's OpCounts
	rtMedian    int64          // the median run's round trips
	ratio       float64        // the best peer's median over this one's: above 1 is faster
	hasPeerBest bool
}

// WANMarkdown renders the WAN section: per size, each uploader's median time, the round trips
// and connections the relay counted, and its speed against the best peer's.
func WANMarkdown(env WANEnv, recs []WANRecord) string {
	var b strings.Builder
	title := env.Title
	if title == "" {
		title = "Over a wide-area link (emulated)"
	}
	fmt.Fprintf(&b, "## %s\n\n", title)
	fmt.Fprintf(&b, "Generated by `%s` on %s (%s).\n\n", env.Command, env.Date, env.Versions)
	if env.Machine != "" {
		fmt.Fprintf(&b, "Machine: %s; load average %s. The relay, the uploader and the server share its cores: where they are busy, large objects are bound by the CPU before the link.\n\n", env.Machine, env.Load)
	}
	fmt.Fprintf(&b, "- **Link**: %s round trip, %s shared by all connections in each direction, %s in flight per connection and direction (a connection moves at most that per round trip; no slow start), emulated by the benchmark's own relay (`bench/internal/link`) on loopback in front of %s.\n",
		env.Link.RTT.String(), FormatRate(env.Link.Rate), bytesize.Format(env.Link.Window), env.ServerName)
	b.WriteString("- **Cold**: every write gets a fresh client (its own connection pool) and the relay closes every connection before it, so each write pays its connections' handshakes (the relay holds a new connection's first bytes for one round trip, as a SYN costs).\n")
	b.WriteString("- **Defaults**: every uploader at its own part size, concurrency and checksum defaults, nothing set; the source is a file (an `*io.SectionReader`; the CLI is given its path); " +
		"safeput's library rows use one `writer.Uploader` per write, its CLI (the whole process, start-up included) a cache directory fresh for the run, so its first multipart write probes the endpoint and later ones reuse the answer. " +
		"safeput-cached/aws is safeput-defaults/aws with `Options.EndpointCache` filled by one earlier, untimed write to the server, as a service restarting with its cache has: it sends no probe, and its single PUTs, whose answers echo the checksum of a server known to check it, take no MD5.")
	if env.Signing == SigningUnsigned {
		b.WriteString(" Peers send UNSIGNED-PAYLOAD, as over TLS (see Method).")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- **Round trips**: the relay's count of turns during the write, summed over its connections: each time bytes came from the server after bytes from the client (an `Expect: 100-continue` request is two, parts in flight on several connections count one each, handshakes are not counted). Times are medians of %d run(s); round trips and connections show the range over the runs when they differ. \"× best peer\" is the fastest peer's median time over the row's: above 1.00× is faster.\n", env.Runs)
	b.WriteString("- **Requests**: the S3 requests the relay carried during the write, named from their request lines, each kind counted over all connections in the order it first appeared (each distinct summary of the runs, in run order); a 100-continue is a body the client sent only after the server's interim answer, a round trip of its own; more UploadParts than parts are a part sent twice (a retry); safeput's endpoint probe is an upload of its own: a second CreateMultipartUpload, one tiny UploadPart with a wrong checksum, and an AbortMultipartUpload.\n\n")

	sizes := []int64{}
	for _, r := range recs {
		if !slices.Contains(sizes, r.Size) {
			sizes = append(sizes, r.Size)
		}
	}
	slices.Sort(sizes)
	var legend []string // the kinds of extra request the section names, for the legend under it
	for _, size := range sizes {
		rows := wanRows(recs, size)
		for _, op := range extraOps(rows) {
			if !slices.Contains(legend, op) {
				legend = append(legend, op)
			}
		}
		fmt.Fprintf(&b, "### %s\n\n", bytesize.Format(size))
		b.WriteString("| implementation | time | MiB/s | round trips | time / RTT | connections | × best peer | requests |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|---|\n")
		for _, r := range rows {
			ratio := "–"
			if r.hasPeerBest {
				ratio = fmt.Sprintf("%.2f×", r.ratio)
			}
			perRTT := "–"
			if env.Link.RTT > 0 {
				perRTT = fmt.Sprintf("%.1f", r.median/env.Link.RTT.Seconds())
			}
			fmt.Fprintf(&b, "| %s | %.3f s | %.1f | %s | %s | %s | %s | %s |\n", r.impl, r.median, mibps(size, r.median),
				countSpan(r.rtMin, r.rtMax), perRTT, countSpan(r.connMin, r.connMax), ratio, strings.Join(r.requests, "; or "))
		}
		b.WriteString("\n")
		b.WriteString(extraTurnLines(rows))
	}
	if len(legend) > 0 {
		slices.Sort(legend)
		b.WriteString("What each kind of request beyond the fastest peer's is for:\n\n")
		for _, op := range legend {
			why := whyOp[op]
			if why == "" {
				why = "no explanation recorded"
			}
			fmt.Fprintf(&b, "- **%s**: %s.\n", op, why)
		}
		b.WriteString("\n")
	}
	if unlisted := multipartWithout(recs, "ListParts"); unlisted > 0 && !slices.Contains(legend, "ListParts") {
		fmt.Fprintf(&b, "No ListParts: in %d of safeput's multipart writes here, %s.\n\n", unlisted, whyNoListParts)
	}
	if unheaded := multipartWithout(recs, "HEAD"); unheaded > 0 {
		fmt.Fprintf(&b, "No HEAD after Complete: in %d of safeput's multipart writes here, %s.\n\n", unheaded, whyNoHead)
	}
	return b.String()
}

// whyNoListParts says why a safeput multipart write may go without the listing before Complete.
const whyNoListParts = "every part's receipt echoed the checksum sent, from a server the probe showed checks it " +
	"(`writer.SaveRereads`, on by default): each receipt is then the server's checked record of its part, which the listing " +
	"would only repeat, at one round trip. A write lists its parts before Complete, one round trip, wherever a receipt does not " +
	"prove its part (a server that checks no part checksum, such as Ceph RGW, or parts resumed from the journal), and after a " +
	"Complete that refuses a part"

// whyNoHead says why a safeput multipart write may go without the HEAD after Complete.
const whyNoHead = "the listing was left out as above and Complete's answer carried the object's full-object checksum, " +
	"equal to the write's (`writer.SaveRereads` again): the server's own sum of what it committed, which it checks against the " +
	"one sent before committing (`TestCompleteChecksTheObjectChecksum`), so the HEAD would only repeat it. A write sends the " +
	"HEAD, one round trip, wherever it lists its parts, the answer carries no such checksum (Ceph RGW), encryption was asked " +
	"for, or Options.ReadBack is set"

// multipartWithout counts safeput's multipart writes that sent no request of kind op.
func multipartWithout(recs []WANRecord, op string) int {
	n := 0
	for _, r := range recs {
		if strings.HasPrefix(r.Impl, "safeput") && r.Ops["CompleteMultipartUpload"] > 0 && r.Ops[op] == 0 {
			n++
		}
	}
	return n
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func countSpan(lo, hi int64) string {
	if lo == hi {
		return strconv.FormatInt(lo, 10)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// extraTurnLines lists, for each safeput row, the round trips it made beyond the fastest peer's
// and what each kind of request is for: the cost of safeput's evidence at this size, measured.
func extraTurnLines(rows []wanRow) string {
	best := -1
	for i, r := range rows {
		if r.role == RolePeer && r.median > 0 && (best < 0 || r.median < rows[best].median) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	p := rows[best]
	var b strings.Builder
	for _, r := range rows {
		if r.role != RoleSafeput || r.ops == nil {
			continue
		}
		fmt.Fprintf(&b, "- %s: %d round trips against %s's %d", r.impl, r.rtMedian, p.impl, p.rtMedian)
		if x := extraTurns(r.ops, p.ops); x != "" {
			b.WriteString(": " + x)
		}
		b.WriteString(".\n")
	}
	if b.Len() == 0 {
		return ""
	}
	return "Round trips beyond the fastest peer's (" + p.impl + "), by request, in the runs nearest the median time:\n\n" + b.String() + "\n"
}

// wanRows summarises one size's records in WANImpls order (unknown names after, by name).
func wanRows(recs []WANRecord, size int64) []wanRow {
	by := map[string][]WANRecord{}
	var names []string
	for _, r := range recs {
		if r.Size != size {
			continue
		}
		if _, ok := by[r.Impl]; !ok {
			names = append(names, r.Impl)
		}
		by[r.Impl] = append(by[r.Impl], r)
	}
	order := func(n string) int {
		i := slices.IndexFunc(WANImpls(), func(w WANImpl) bool { return w.Name == n })
		if i < 0 {
			return len(WANImpls())
		}
		return i
	}
	slices.SortStableFunc(names, func(a, b string) int {
		if d := order(a) - order(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var rows []wanRow
	best := 0.0
	for _, n := range names {
		rs := by[n]
		secs := make([]float64, len(rs))
		r := wanRow{impl: n, role: RolePeer, runs: len(rs), rtMin: rs[0].RoundTrips, rtMax: rs[0].RoundTrips, connMin: rs[0].Connections, connMax: rs[0].Connections}
		if w, ok := wanImpl(n); ok {
			r.role = w.Role
		}
		for i, x := range rs {
			secs[i] = x.Seconds
			r.rtMin, r.rtMax = min(r.rtMin, x.RoundTrips), max(r.rtMax, x.RoundTrips)
			r.connMin, r.connMax = min(r.connMin, x.Connections), max(r.connMax, x.Connections)
			if !slices.Contains(r.requests, x.Requests) {
				r.requests = append(r.requests, x.Requests)
			}
		}
		r.median = median(secs)
		// The run whose time is nearest the median stands for the row's requests.
		mid := rs[0]
		for _, x := range rs {
			if abs(x.Seconds-r.median) < abs(mid.Seconds-r.median) {
				mid = x
			}
		}
		r.ops, r.rtMedian = mid.Ops, mid.RoundTrips
		if r.role == RolePeer && r.median > 0 && (best == 0 || r.median < best) {
			best = r.median
		}
		rows = append(rows, r)
	}
	for i := range rows {
		if best > 0 && rows[i].median > 0 {
			rows[i].ratio, rows[i].hasPeerBest = best/rows[i].median, true
		}
	}
	return rows
}

// The WAN section sits between these markers, so a WAN run replaces only it and the other runs
// keep it.
const (
	WANBegin = "<!-- wan:begin (generated by scripts/bench.sh with WAN_ONLY=1) -->"
	WANEnd   = "<!-- wan:end -->"
)

// CutWAN returns doc without its WAN block (markers included) and the block's content ("" when
// it has none).
func CutWAN(doc string) (rest, section string) {
	i := strings.Index(doc, WANBegin)
	j := strings.Index(doc, WANEnd)
	if i < 0 || j < i {
		return doc, ""
	}
	end := j + len(WANEnd)
	if end < len(doc) && doc[end] == '\n' {
		end++
	}
	return doc[:i] + doc[end:], strings.TrimPrefix(doc[i+len(WANBegin):j], "\n")
}

// The far-link section (WAN_FAR=1: the same run over a longer round trip) sits between these
// markers inside the WAN block, so each of the two runs replaces only its own part.
const (
	FarBegin = "<!-- wan-far:begin (generated by scripts/bench.sh with WAN_ONLY=1 WAN_FAR=1) -->"
	FarEnd   = "<!-- wan-far:end -->"
)

// JoinWAN is the WAN block after a run that made section: the far-link part of block replaced
// (far), or the rest of it with its far-link part kept.
func JoinWAN(block, section string, far bool) string {
	main, farPart := block, ""
	if i, j := strings.Index(block, FarBegin), strings.Index(block, FarEnd); i >= 0 && j > i {
		main, farPart = block[:i], strings.TrimPrefix(block[i+len(FarBegin):j], "\n")
	}
	if far {
		farPart = section
	} else {
		main = section
	}
	out := strings.TrimRight(main, "\n") + "\n"
	if strings.TrimSpace(farPart) != "" {
		out += "\n" + FarBegin + "\n" + strings.TrimRight(farPart, "\n") + "\n" + FarEnd + "\n"
	}
	return out
}

// SpliceWAN puts section between the markers in doc, replacing what was there, or appends the
// block (after a blank line) when doc has none.
func SpliceWAN(doc, section string) string {
	return spliceBetween(doc, WANBegin, WANEnd, strings.TrimRight(section, "\n")+"\n")
}
