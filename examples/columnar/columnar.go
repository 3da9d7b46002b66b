package columnar

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// Options are the Uploader options the examples use: 5 MiB parts under the Versity S3 Gateway
// profile, so a table of tens of MiB goes out as several parts.
func Options() []func(*writer.Options) {
	return []func(*writer.Options){func(o *writer.Options) { o.Profile = "versitygw"; o.PartSize = 5 << 20 }}
}

// WriteParquet streams the generator's table as Parquet into bucket/key through up (opts are
// this write's own, on top of up's). It returns the
// verified Result and the digest of what was written; on any failure the upload is aborted and
// the error unwraps to *errors.Error.
func WriteParquet(ctx context.Context, up *writer.Uploader, bucket, key string, gen *Generator, opts ...func(*writer.Options)) (*writer.Result, Digest, error) {
	w, err := up.New(ctx, bucket, key, opts...)
	if err != nil {
		return nil, Digest{}, err
	}
	sink := NewSink(w)
	d, err := writeParquet(sink, gen)
	if err != nil {
		return nil, Digest{}, err
	}
	return sink.Result(), d, nil
}

// writeParquet drives pqarrow over sink. Every exit path either commits (the sink's Close, run
// by pqarrow's Close) or aborts.
func writeParquet(sink *Sink, gen *Generator) (d Digest, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = sperrors.FromPanic("WriteParquet", p)
		}
		if err != nil {
			_ = sink.Abort() // pqarrow may have returned without closing the sink
		}
	}()
	mem := gen.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	props := parquet.NewWriterProperties(
		parquet.WithAllocator(mem),
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(256<<10),
		// Unique strings and float vectors gain nothing from dictionaries, which only cost
		// time before falling back to plain encoding.
		parquet.WithDictionaryDefault(false),
	)
	fw, err := pqarrow.NewFileWriter(Schema, sink, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		return d, classified("WriteParquet", err)
	}
	dg := newDigester()
	for rec := gen.Next(); rec != nil; rec = gen.Next() {
		err := dg.add(rec)
		if err == nil {
			err = fw.Write(rec)
		}
		rec.Release()
		if err != nil {
			_ = fw.Close() // releases its buffers; the sink turns this Close into an abort
			return d, classified("WriteParquet", err)
		}
	}
	// pqarrow's Close writes the footer and closes the sink: that is the commit.
	if err := fw.Close(); err != nil {
		return d, classified("WriteParquet", err)
	}
	// Ask the sink too: a columnar writer that loses a footer error inside its Close (as
	// arrow-go releases before v18.8 could) still cannot make this return success, because
	// the sink aborted instead of committing.
	if err := sink.Close(); err != nil {
		return d, classified("WriteParquet", err)
	}
	return dg.digest(), nil
}

// WriteIPC streams the table as an Arrow IPC file. ipc.FileWriter.Close writes the footer but
// does not close its sink, so the commit is an explicit sink.Close after it.
func WriteIPC(ctx context.Context, up *writer.Uploader, bucket, key string, gen *Generator, opts ...func(*writer.Options)) (*writer.Result, Digest, error) {
	w, err := up.New(ctx, bucket, key, opts...)
	if err != nil {
		return nil, Digest{}, err
	}
	sink := NewSink(w)
	d, err := writeIPC(sink, gen)
	if err != nil {
		return nil, Digest{}, err
	}
	return sink.Result(), d, nil
}

func writeIPC(sink *Sink, gen *Generator) (d Digest, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = sperrors.FromPanic("WriteIPC", p)
		}
		if err != nil {
			_ = sink.Abort()
		}
	}()
	mem := gen.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	iw, err := ipc.NewFileWriter(sink, ipc.WithSchema(Schema), ipc.WithAllocator(mem))
	if err != nil {
		return d, classified("WriteIPC", err)
	}
	dg := newDigester()
	for rec := gen.Next(); rec != nil; rec = gen.Next() {
		err := dg.add(rec)
		if err == nil {
			err = iw.Write(rec)
		}
		rec.Release()
		if err != nil {
			_ = iw.Close()
			return d, classified("WriteIPC", err)
		}
	}
	if err := iw.Close(); err != nil {
		return d, classified("WriteIPC", err)
	}
	if err := sink.Close(); err != nil { // the commit: ipc does not close its sink
		return d, classified("WriteIPC", err)
	}
	return dg.digest(), nil
}

// ObjectReaderAt reads an object with ranged GETs: it is the parquet.ReaderAtSeeker (and
// ipc.ReadAtSeeker) arrow-go's readers need, so a reader fetches the footer and the column
// chunks it wants instead of the whole object.
type ObjectReaderAt struct {
	ctx         context.Context
	st          store.Store
	bucket, key string
	size        int64
	off         int64 // for Read and Seek

	// Requests and Bytes count the ranged GETs and the bytes they returned.
	Requests atomic.Int64
	Bytes    atomic.Int64
}

// NewObjectReaderAt sizes the object with a HEAD.
func NewObjectReaderAt(ctx context.Context, st store.Store, bucket, key string) (*ObjectReaderAt, error) {
	head, err := st.HeadObject(ctx, &store.HeadObjectInput{Bucket: bucket, Key: key})
	if err != nil {
		return nil, sperrors.ClassifyContext(ctx, err)
	}
	return &ObjectReaderAt{ctx: ctx, st: st, bucket: bucket, key: key, size: head.Size}, nil
}

// Size is the object's length.
func (r *ObjectReaderAt) Size() int64 { return r.size }

// ReadAt implements io.ReaderAt with one ranged GET per call.
func (r *ObjectReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("columnar: negative offset %d", off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.size-off)
	if n == 0 {
		return 0, nil
	}
	out, err := r.st.GetObject(r.ctx, &store.GetObjectInput{Bucket: r.bucket, Key: r.key, Offset: off, Length: n})
	if err != nil {
		return 0, sperrors.ClassifyContext(r.ctx, err)
	}
	defer out.Body.Close()
	r.Requests.Add(1)
	m, err := io.ReadFull(out.Body, p[:n])
	r.Bytes.Add(int64(m))
	if err != nil {
		return m, fmt.Errorf("columnar: range %d+%d of %s/%s: %w", off, n, r.bucket, r.key, err)
	}
	if n < int64(len(p)) {
		return m, io.EOF
	}
	return m, nil
}

// Read implements io.Reader from the current offset.
func (r *ObjectReaderAt) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.off)
	r.off += int64(n)
	if n > 0 && stderrors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// Seek implements io.Seeker.
func (r *ObjectReaderAt) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, fmt.Errorf("columnar: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("columnar: seek to negative offset %d", offset)
	}
	r.off = offset
	return offset, nil
}

// ReadParquet reads the object back with arrow-go's Parquet reader over ranged GETs and
// returns the digest of its rows.
func ReadParquet(ctx context.Context, st store.Store, bucket, key string) (Digest, *ObjectReaderAt, error) {
	ra, err := NewObjectReaderAt(ctx, st, bucket, key)
	if err != nil {
		return Digest{}, nil, err
	}
	pf, err := file.NewParquetReader(ra)
	if err != nil {
		return Digest{}, ra, err
	}
	defer func() { _ = pf.Close() }()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return Digest{}, ra, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return Digest{}, ra, err
	}
	defer rr.Release()
	dg := newDigester()
	for rr.Next() {
		if err := dg.add(rr.RecordBatch()); err != nil {
			return Digest{}, ra, err
		}
	}
	if err := rr.Err(); err != nil && !stderrors.Is(err, io.EOF) {
		return Digest{}, ra, err
	}
	return dg.digest(), ra, nil
}

// ReadIPC reads an Arrow IPC file back over ranged GETs and returns the digest of its rows.
func ReadIPC(ctx context.Context, st store.Store, bucket, key string) (Digest, *ObjectReaderAt, error) {
	ra, err := NewObjectReaderAt(ctx, st, bucket, key)
	if err != nil {
		return Digest{}, nil, err
	}
	fr, err := ipc.NewFileReader(ra)
	if err != nil {
		return Digest{}, ra, err
	}
	defer func() { _ = fr.Close() }()
	dg := newDigester()
	for i := range fr.NumRecords() {
		rec, err := fr.RecordBatchAt(i)
		if err != nil {
			return Digest{}, ra, err
		}
		err = dg.add(rec)
		rec.Release()
		if err != nil {
			return Digest{}, ra, err
		}
	}
	return dg.digest(), ra, nil
}
