package arrowlite

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Builder accumulates the values of one column (and its children). Every
// Append adds exactly one slot. Builders are reused across batches: Reset
// keeps their memory.
//
// Offsets (Utf8, Binary, List, Map) hold the start of each slot; the final
// end offset is added when the batch is written, which lets Truncate drop
// the last rows of a nested column cheaply.
type Builder struct {
	Type     *DataType
	Children []*Builder

	n, nulls int
	valid    []byte  // validity bitmap, bit i set = slot i not null
	data     []byte  // fixed-width values, bool bits or variable-width bytes
	offs     []int32 // slot starts for Utf8/Binary (into data) and List/Map (into child)
	width    int
}

// NewBuilder returns a builder for t.
func NewBuilder(t *DataType) *Builder {
	b := &Builder{Type: t, width: t.Width()}
	for _, c := range t.Children {
		b.Children = append(b.Children, NewBuilder(c.Type))
	}
	return b
}

// Len is the number of slots appended.
func (b *Builder) Len() int { return b.n }

// NullCount is the number of null slots.
func (b *Builder) NullCount() int { return b.nulls }

// Reset empties the builder and its children, keeping capacity.
func (b *Builder) Reset() {
	b.n, b.nulls = 0, 0
	b.valid, b.data, b.offs = b.valid[:0], b.data[:0], b.offs[:0]
	for _, c := range b.Children {
		c.Reset()
	}
}

func (b *Builder) setValid(ok bool) {
	i := uint(b.n) // unsigned: / and % by 8 are a shift and a mask
	if i%8 == 0 {
		b.valid = append(b.valid, 0)
	}
	if ok {
		b.valid[i/8] |= 1 << (i % 8)
	} else {
		b.nulls++
	}
	b.n++
}

func (b *Builder) isValid(i int) bool { return b.valid[i/8]&(1<<(i%8)) != 0 }

// AppendNull appends a null slot. For a struct, every child gets a null
// slot too so that the children stay aligned.
func (b *Builder) AppendNull() {
	switch b.Type.ID {
	case Null:
	case Bool:
		b.appendBit(false)
	case Utf8, Binary:
		b.offs = append(b.offs, int32(len(b.data)))
	case List, Map:
		b.offs = append(b.offs, int32(b.Children[0].n))
	case Struct:
		for _, c := range b.Children {
			c.AppendNull()
		}
	default:
		b.data = append(b.data, make([]byte, b.width)...)
	}
	b.setValid(false)
}

func (b *Builder) appendBit(v bool) {
	if b.n%8 == 0 {
		b.data = append(b.data, 0)
	}
	if v {
		b.data[b.n/8] |= 1 << (b.n % 8)
	}
}

// AppendBool appends to a Bool column.
func (b *Builder) AppendBool(v bool) {
	b.appendBit(v)
	b.setValid(true)
}

// AppendInt appends to an Int, Date or Timestamp column, truncated to the
// column's width (callers check ranges).
func (b *Builder) AppendInt(v int64) {
	switch b.width {
	case 1:
		b.data = append(b.data, byte(v))
	case 2:
		b.data = binary.LittleEndian.AppendUint16(b.data, uint16(v))
	case 4:
		b.data = binary.LittleEndian.AppendUint32(b.data, uint32(v))
	default:
		b.data = binary.LittleEndian.AppendUint64(b.data, uint64(v))
	}
	b.setValid(true)
}

// AppendFloat appends to a FloatingPoint column.
func (b *Builder) AppendFloat(v float64) {
	if b.width == 4 {
		b.data = binary.LittleEndian.AppendUint32(b.data, math.Float32bits(float32(v)))
	} else {
		b.data = binary.LittleEndian.AppendUint64(b.data, math.Float64bits(v))
	}
	b.setValid(true)
}

// AppendDecimal appends the unscaled 128-bit two's complement value hi:lo.
func (b *Builder) AppendDecimal(lo uint64, hi int64) {
	b.data = binary.LittleEndian.AppendUint64(b.data, lo)
	b.data = binary.LittleEndian.AppendUint64(b.data, uint64(hi))
	b.setValid(true)
}

// AppendBytes appends to a Utf8 or Binary column (callers check UTF-8).
func (b *Builder) AppendBytes(v []byte) {
	b.offs = append(b.offs, int32(len(b.data)))
	b.data = append(b.data, v...)
	b.setValid(true)
}

// AppendString appends to a Utf8 or Binary column.
func (b *Builder) AppendString(v string) {
	b.offs = append(b.offs, int32(len(b.data)))
	b.data = append(b.data, v...)
	b.setValid(true)
}

// AppendStruct appends a non-null struct slot; the caller then appends
// exactly one slot to every child.
func (b *Builder) AppendStruct() { b.setValid(true) }

// AppendList starts a non-null List or Map slot; the caller then appends
// its items (for a Map, entries structs) to Children[0].
func (b *Builder) AppendList() {
	b.offs = append(b.offs, int32(b.Children[0].n))
	b.setValid(true)
}

// Layout is a builder's content in Arrow's columnar layout, for a native
// host that copies it into its own arrays (the views alias the builder and
// are valid until its next change).
type Layout struct {
	Len, Nulls int
	Valid      []byte  // validity bitmap, (Len+7)/8 bytes; nil when Nulls == 0
	Data       []byte  // values (fixed width or bool bits) or the bytes of Utf8/Binary
	Starts     []int32 // Utf8/Binary/List/Map: start of each slot; the end is End
	End        int32   // Utf8/Binary: len(Data); List/Map: the child's Len
}

// Layout returns the builder's content (its children have their own).
func (b *Builder) Layout() Layout {
	l := Layout{Len: b.n, Nulls: b.nulls, Data: b.data, Starts: b.offs}
	if b.nulls > 0 {
		l.Valid = b.valid
	}
	switch b.Type.ID {
	case Utf8, Binary:
		l.End = int32(len(b.data))
	case List, Map:
		l.End = int32(b.Children[0].n)
	}
	return l
}

// Truncate drops every slot from n on (n <= Len), children included, and
// whatever a child holds beyond the slots left: a row given up half-way (a
// map entry whose key is in but not its value) leaves children longer than
// their parent accounts for.
func (b *Builder) Truncate(n int) {
	n = min(n, b.n)
	for i := n; i < b.n; i++ {
		if !b.isValid(i) {
			b.nulls--
		}
	}
	switch b.Type.ID {
	case Null:
	case Bool:
		b.data = truncBits(b.data, n)
	case Utf8, Binary:
		if n < len(b.offs) {
			b.data = b.data[:b.offs[n]]
			b.offs = b.offs[:n]
		}
	case List, Map:
		end := b.Children[0].n
		if n < len(b.offs) {
			end = int(b.offs[n])
			b.offs = b.offs[:n]
		}
		b.Children[0].Truncate(end)
	case Struct:
		for _, c := range b.Children {
			c.Truncate(n)
		}
	default:
		b.data = b.data[:n*b.width]
	}
	b.valid = truncBits(b.valid, n)
	b.n = n
}

// truncBits keeps the first n bits of a bitmap and clears the rest of the
// last byte so later appends can OR into it.
func truncBits(bm []byte, n int) []byte {
	bm = bm[:(n+7)/8]
	if n%8 != 0 {
		bm[n/8] &= byte(1<<(n%8)) - 1
	}
	return bm
}

// bitCount counts set bits, used by tests and assertions.
func bitCount(bm []byte) int {
	c := 0
	for _, x := range bm {
		c += bits.OnesCount8(x)
	}
	return c
}
