package rawbatch

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/cmem"
)

// The raw schema's columns are written straight into their Arrow buffers,
// not through arrow-go's builders:
//   - the builders zero every byte they reserve before Append overwrites
//     it; with cmem zeroing a reused mapping as well, the payload bytes were
//     written three times (4% of the Spark workers' CPU at 1 KB);
//   - their per-value Append (through an interface, a length check, a
//     bitmap write and an offset append each) was ~3% of all CPU of a Spark
//     read at 1 KB, for columns that take a handful of values per message
//     (bench/tools/spark_cpu.py pubsub-go-defaults --perf profiles both).
// Value buffers come from cmem.Uninitialized; only bytes the offsets cover
// are ever read, and a null's slot in a fixed-width column is written as
// zero.

// minValueBytes is the first value buffer of a batch with no size hint.
const minValueBytes = 4 << 10

// ownedBuffer hands buf (allocated from mem) to a memory.Buffer that frees
// it when the array built on it is released; nil stays nil.
func ownedBuffer(buf []byte, mem memory.Allocator) *memory.Buffer {
	if buf == nil {
		return nil
	}
	return memory.NewBufferWithAllocator(buf, mem)
}

// makeArray builds array data of typ that takes over bufs and children
// (the caller's references to them go to it).
func makeArray(typ arrow.DataType, rows, nulls int, bufs []*memory.Buffer, children []arrow.ArrayData) arrow.ArrayData {
	data := array.NewData(typ, rows, bufs, children, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	for _, c := range children {
		c.Release()
	}
	return data
}

// validity is a column's validity bitmap, made only once the column has a
// null (Arrow allows none when every value is valid).
type validity struct {
	bits  []byte // as allocated; nil: all valid so far
	nulls int
	grows int // bitmaps moved to a larger one (tests)
}

// set records row's validity; rows come in order from 0. capRows is the
// rows the column has room for: the bitmap is sized for them at once.
func (v *validity) set(mem memory.Allocator, row int, valid bool, capRows int) {
	if v.bits == nil {
		if valid {
			return
		}
		v.grow(mem, max(row+1, capRows))
		bitutil.SetBitsTo(v.bits, 0, int64(row), true) // every row before was valid
	} else if row>>3 >= len(v.bits) {
		v.grow(mem, max(2*8*len(v.bits), row+1, capRows))
		v.grows++
	}
	if valid {
		v.bits[row>>3] |= 1 << (row & 7)
	} else {
		v.bits[row>>3] &^= 1 << (row & 7)
		v.nulls++
	}
}

// grow makes room for n rows, keeping what is set; new bits are 0.
func (v *validity) grow(mem memory.Allocator, n int) {
	size := (n + 7) / 8
	if v.bits == nil {
		v.bits = mem.Allocate(size)
		clear(v.bits) // rows are set bit by bit
		return
	}
	if old := len(v.bits); size > old {
		v.bits = mem.Reallocate(size, v.bits)
		clear(v.bits[old:])
	}
}

// take returns the bitmap as a buffer (nil when all valid) and the null
// count, and starts over.
func (v *validity) take(mem memory.Allocator) (*memory.Buffer, int) {
	b, n := ownedBuffer(v.bits, mem), v.nulls
	*v = validity{grows: v.grows}
	return b, n
}

func (v *validity) release(mem memory.Allocator) {
	if v.bits != nil {
		mem.Free(v.bits)
	}
	*v = validity{}
}

// varColumn builds a utf8 or binary column: int32 offsets and the values.
// Strings are not checked here: package wire has checked them.
type varColumn struct {
	typ     arrow.DataType // utf8 or binary
	mem     memory.Allocator
	offsets []int32 // views offBuf
	offBuf  []byte  // as allocated
	vals    []byte  // as allocated (its length is what Free must be given)
	used    int     // bytes of vals the offsets cover
	rows    int
	valid   validity
	grows   int // buffers moved to a larger one while rows were appended (tests)
}

// reserve sizes the buffers of a batch that has no rows yet.
func (c *varColumn) reserve(rows, valueBytes int) {
	c.growOffsets(rows + 1)
	if valueBytes > len(c.vals) {
		c.freeValues()
		c.vals = cmem.Uninitialized(c.mem, valueBytes)
	}
}

// growOffsets makes room for n offsets, keeping those written.
func (c *varColumn) growOffsets(n int) {
	if n <= len(c.offsets) {
		return
	}
	if c.offBuf == nil {
		c.offBuf = c.mem.Allocate(n * 4)
	} else {
		c.offBuf = c.mem.Reallocate(n*4, c.offBuf)
		c.grows++
	}
	c.offsets = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(c.offBuf))), n)
}

// append adds v as the next value.
func (c *varColumn) append(v []byte) {
	if c.rows+2 > len(c.offsets) {
		c.growOffsets(max(2*len(c.offsets), 64))
	}
	if c.used+len(v) > len(c.vals) {
		c.growValues(c.used + len(v))
	}
	if c.valid.bits != nil {
		c.valid.set(c.mem, c.rows, true, len(c.offsets)-1)
	}
	c.offsets[c.rows] = int32(c.used)
	c.used += copy(c.vals[c.used:], v)
	c.rows++
	c.offsets[c.rows] = int32(c.used)
}

// appendNull adds a null (an empty slot).
func (c *varColumn) appendNull() {
	if c.rows+2 > len(c.offsets) {
		c.growOffsets(max(2*len(c.offsets), 64))
	}
	c.valid.set(c.mem, c.rows, false, len(c.offsets)-1)
	c.offsets[c.rows] = int32(c.used)
	c.rows++
	c.offsets[c.rows] = int32(c.used)
}

// growValues moves the values to a buffer of at least n bytes (doubling).
func (c *varColumn) growValues(n int) {
	if c.used > 0 {
		c.grows++
	}
	next := cmem.Uninitialized(c.mem, max(n, 2*len(c.vals), minValueBytes))
	copy(next, c.vals[:c.used])
	c.freeValues()
	c.vals = next
}

func (c *varColumn) freeValues() {
	if c.vals != nil {
		c.mem.Free(c.vals)
		c.vals = nil
	}
}

// finish returns the rows appended as array data that owns the buffers;
// the column starts over empty. An empty column still has its one offset.
func (c *varColumn) finish() arrow.ArrayData {
	c.growOffsets(c.rows + 1)
	c.offsets[c.rows] = int32(c.used) // the only offset when there are no rows
	if c.vals == nil {
		c.vals = cmem.Uninitialized(c.mem, minValueBytes)
	}
	bits, nulls := c.valid.take(c.mem)
	data := makeArray(c.typ, c.rows, nulls, []*memory.Buffer{bits, ownedBuffer(c.offBuf, c.mem), ownedBuffer(c.vals, c.mem)}, nil)
	c.offBuf, c.offsets, c.vals, c.used, c.rows = nil, nil, nil, 0, 0
	return data
}

// release frees what the column holds (Builder.Release).
func (c *varColumn) release() {
	c.freeValues()
	if c.offBuf != nil {
		c.mem.Free(c.offBuf)
		c.offBuf, c.offsets = nil, nil
	}
	c.valid.release(c.mem)
	c.used, c.rows = 0, 0
}

// fixedColumn builds a column of int32 or int64 values (timestamps are
// int64), or a list's int32 offsets.
type fixedColumn[T int32 | int64] struct {
	typ   arrow.DataType
	mem   memory.Allocator
	vals  []T    // views buf
	buf   []byte // as allocated
	rows  int
	valid validity
	grows int // buffers moved to a larger one while rows were appended (tests)
}

// reserve makes room for n values, keeping those written.
func (c *fixedColumn[T]) reserve(n int) {
	if n <= len(c.vals) {
		return
	}
	size := int(unsafe.Sizeof(T(0)))
	if c.buf == nil {
		c.buf = cmem.Uninitialized(c.mem, n*size)
	} else {
		if c.rows > 0 {
			c.grows++
		}
		next := cmem.Uninitialized(c.mem, n*size)
		copy(next, c.buf[:c.rows*size])
		c.mem.Free(c.buf)
		c.buf = next
	}
	c.vals = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(c.buf))), n)
}

// append adds v as the next value.
func (c *fixedColumn[T]) append(v T) {
	if c.rows >= len(c.vals) {
		c.reserve(max(2*len(c.vals), 64))
	}
	if c.valid.bits != nil {
		c.valid.set(c.mem, c.rows, true, len(c.vals))
	}
	c.vals[c.rows] = v
	c.rows++
}

// appendNull adds a null; its slot holds 0.
func (c *fixedColumn[T]) appendNull() {
	if c.rows >= len(c.vals) {
		c.reserve(max(2*len(c.vals), 64))
	}
	c.valid.set(c.mem, c.rows, false, len(c.vals))
	c.vals[c.rows] = 0
	c.rows++
}

// finish returns the values appended as array data that owns the
// buffers; the column starts over empty.
func (c *fixedColumn[T]) finish() arrow.ArrayData {
	c.reserve(max(c.rows, 1)) // an empty column still has a buffer
	bits, nulls := c.valid.take(c.mem)
	data := makeArray(c.typ, c.rows, nulls, []*memory.Buffer{bits, ownedBuffer(c.buf, c.mem)}, nil)
	c.buf, c.vals, c.rows = nil, nil, 0
	return data
}

// takeBuffer returns the values as a buffer (a list's offsets) and starts
// over empty.
func (c *fixedColumn[T]) takeBuffer() *memory.Buffer {
	c.reserve(max(c.rows, 1))
	c.valid.release(c.mem)
	b := ownedBuffer(c.buf, c.mem)
	c.buf, c.vals, c.rows = nil, nil, 0
	return b
}

func (c *fixedColumn[T]) release() {
	if c.buf != nil {
		c.mem.Free(c.buf)
	}
	c.valid.release(c.mem)
	c.buf, c.vals, c.rows = nil, nil, 0
}
