package rawbatch

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// binaryColumn builds the payload column (binary, never null) without
// arrow-go's BinaryBuilder, which zeroes every byte it reserves before
// Append overwrites it; with cmem zeroing a reused mapping as well, the
// payload bytes were written three times (bench/harness/analysis.md, issue
// 12, eighth pass: 4% of the Spark workers' CPU at 1 KB). Here the value
// buffer comes from AllocateUninitialized when the allocator has it
// (cmem), and only the bytes the offsets cover are ever read.
type binaryColumn struct {
	mem     memory.Allocator
	offsets []int32 // views offBuf
	offBuf  []byte  // as allocated
	vals    []byte  // as allocated (its length is what Free must be given)
	used    int     // bytes of vals the offsets cover
	rows    int
}

// minValueBytes is the first value buffer of a batch with no size hint.
const minValueBytes = 4 << 10

// uninitAllocator is what cmem.Allocator adds to memory.Allocator.
type uninitAllocator interface {
	AllocateUninitialized(size int) []byte
}

func (c *binaryColumn) allocValues(n int) []byte {
	if u, ok := c.mem.(uninitAllocator); ok {
		return u.AllocateUninitialized(n)
	}
	return c.mem.Allocate(n)
}

// reserve sizes the buffers of a batch that has no rows yet.
func (c *binaryColumn) reserve(rows, valueBytes int) {
	c.growOffsets(rows + 1)
	if valueBytes > len(c.vals) {
		c.freeValues()
		c.vals = c.allocValues(valueBytes)
	}
}

// growOffsets makes room for n offsets, keeping those written.
func (c *binaryColumn) growOffsets(n int) {
	if n <= len(c.offsets) {
		return
	}
	if c.offBuf == nil {
		c.offBuf = c.mem.Allocate(n * 4)
	} else {
		c.offBuf = c.mem.Reallocate(n*4, c.offBuf)
	}
	c.offsets = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(c.offBuf))), n)
}

// append adds v as the next value.
func (c *binaryColumn) append(v []byte) {
	if c.rows+2 > len(c.offsets) {
		c.growOffsets(max(2*len(c.offsets), 64))
	}
	if c.used+len(v) > len(c.vals) {
		c.growValues(c.used + len(v))
	}
	c.offsets[c.rows] = int32(c.used)
	c.used += copy(c.vals[c.used:], v)
	c.rows++
	c.offsets[c.rows] = int32(c.used)
}

// growValues moves the values to a buffer of at least n bytes (doubling).
func (c *binaryColumn) growValues(n int) {
	next := c.allocValues(max(n, 2*len(c.vals), minValueBytes))
	copy(next, c.vals[:c.used])
	c.freeValues()
	c.vals = next
}

func (c *binaryColumn) freeValues() {
	if c.vals != nil {
		c.mem.Free(c.vals)
		c.vals = nil
	}
}

// finish returns the rows appended as an array that owns the buffers; the
// column starts over empty. An empty column still has its one offset.
func (c *binaryColumn) finish() arrow.Array {
	c.growOffsets(c.rows + 1)
	c.offsets[c.rows] = int32(c.used) // the only offset when there are no rows
	if c.vals == nil {
		c.vals = c.allocValues(minValueBytes)
	}
	offs := memory.NewBufferWithAllocator(c.offBuf, c.mem)
	vals := memory.NewBufferWithAllocator(c.vals, c.mem)
	data := array.NewData(arrow.BinaryTypes.Binary, c.rows, []*memory.Buffer{nil, offs, vals}, nil, 0, 0)
	offs.Release()
	vals.Release()
	c.offBuf, c.offsets, c.vals, c.used, c.rows = nil, nil, nil, 0, 0
	defer data.Release()
	return array.MakeFromData(data)
}

// release frees what the column holds (Builder.Release).
func (c *binaryColumn) release() {
	c.freeValues()
	if c.offBuf != nil {
		c.mem.Free(c.offBuf)
		c.offBuf, c.offsets = nil, nil
	}
	c.used, c.rows = 0, 0
}
