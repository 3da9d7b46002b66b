package columnar

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Dim is the vector column's dimension.
const Dim = 8

// Schema is the generated table's: an id, a string and a fixed-size float32 vector, the shape
// of a vector database's insert binlog.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "vec", Type: arrow.FixedSizeListOf(Dim, arrow.PrimitiveTypes.Float32)},
}, nil)

// Generator yields the table in batches, so a table of any size never sits in memory at once.
type Generator struct {
	Rows      int64
	BatchSize int64
	Mem       memory.Allocator
	next      int64
}

// Next returns the next batch (the caller releases it), or nil after the last row.
func (g *Generator) Next() arrow.RecordBatch {
	if g.next >= g.Rows {
		return nil
	}
	mem := g.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	batch := g.BatchSize
	if batch <= 0 {
		batch = 64 << 10
	}
	n := min(batch, g.Rows-g.next)
	b := array.NewRecordBuilder(mem, Schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	names := b.Field(1).(*array.StringBuilder)
	vecs := b.Field(2).(*array.FixedSizeListBuilder)
	vals := vecs.ValueBuilder().(*array.Float32Builder)
	ids.Reserve(int(n))
	names.Reserve(int(n))
	vecs.Reserve(int(n))
	vals.Reserve(int(n) * Dim)
	for i := g.next; i < g.next+n; i++ {
		ids.Append(i)
		names.Append(fmt.Sprintf("row-%07d-%x", i, uint32(i)*2654435761))
		vecs.Append(true)
		for j := range int64(Dim) {
			vals.Append(float32(i*Dim+j) * 0.5)
		}
	}
	g.next += n
	return b.NewRecordBatch()
}

// Digest summarizes a table so what was written and what was read can be compared without
// keeping either: the row count, the sum of ids, and order-sensitive hashes of the strings and
// of the vectors' bits.
type Digest struct {
	Rows    int64
	SumIDs  int64
	Names   uint64
	Vectors uint64
}

// digester accumulates a Digest over batches in order.
type digester struct {
	d             Digest
	names, floats hash64
	scratch       []byte
}

type hash64 interface {
	Write([]byte) (int, error)
	Sum64() uint64
}

func newDigester() *digester { return &digester{names: fnv.New64a(), floats: fnv.New64a()} }

// add folds one batch in; it fails on a batch that does not have the table's shape.
func (g *digester) add(rec arrow.RecordBatch) error {
	if rec.NumCols() != 3 {
		return fmt.Errorf("columnar: batch has %d columns, want 3", rec.NumCols())
	}
	ids, ok1 := rec.Column(0).(*array.Int64)
	names, ok2 := rec.Column(1).(*array.String)
	vecs, ok3 := rec.Column(2).(*array.FixedSizeList)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("columnar: batch columns are %s, %s, %s", rec.Column(0).DataType(), rec.Column(1).DataType(), rec.Column(2).DataType())
	}
	vals, ok := vecs.ListValues().(*array.Float32)
	if !ok {
		return fmt.Errorf("columnar: vector values are %s", vecs.ListValues().DataType())
	}
	// One hash write per batch and column: per-value writes cost more than the hashing itself.
	g.scratch = g.scratch[:0]
	for i := 0; i < ids.Len(); i++ {
		g.d.SumIDs += ids.Value(i)
		g.scratch = append(g.scratch, names.Value(i)...)
		g.scratch = append(g.scratch, 0)
	}
	_, _ = g.names.Write(g.scratch)
	g.scratch = g.scratch[:0]
	for i := 0; i < vecs.Len(); i++ {
		start, end := vecs.ValueOffsets(i)
		for j := start; j < end; j++ {
			bits := math.Float32bits(vals.Value(int(j)))
			g.scratch = append(g.scratch, byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24))
		}
	}
	_, _ = g.floats.Write(g.scratch)
	g.d.Rows += rec.NumRows()
	return nil
}

func (g *digester) digest() Digest {
	d := g.d
	d.Names, d.Vectors = g.names.Sum64(), g.floats.Sum64()
	return d
}
