// Package abi is the host side of the decoder ABI's data formats
// (docs/decoder-abi.md), shared by every engine that runs modules: the
// flat schema of ABI 2 and the output layout a module returns, read and
// validated into Arrow arrays. It knows nothing of how a module runs.
package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/cmem"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
)

// Decoder ABI version 2 (docs/decoder-abi.md): no Arrow IPC on either
// side, so that a guest needs no flatbuffers code. The config's schema is
// a flat preorder list of fields (encodeFields), pg_schema returns the
// module's schema in the same form, and pg_output returns the batch's
// layout: its Arrow field nodes and buffers (as in an IPC record batch
// message) pointing into guest memory, which the host hands out as it
// lies (internal/guest's pins) or copies once into its own allocator.

// EncodeFields writes fields in the v2 schema form: u32 count, then per
// field u32 name length, name, u8 type (Schema.fbs numbering), u8
// nullable, i32 p1, i32 p2, u32 tz length, tz, u32 child count, children.
func EncodeFields(b []byte, fields []arrow.Field) ([]byte, error) {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(fields)))
	for _, f := range fields {
		var id byte
		var p1, p2 int32
		var tz string
		var children []arrow.Field
		switch t := f.Type.(type) {
		case *arrow.NullType:
			id = 1
		case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
			*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
			id, p1 = 2, int32(t.(arrow.FixedWidthDataType).BitWidth())
			if arrow.IsSignedInteger(t.ID()) {
				p2 = 1
			}
		case *arrow.Float32Type:
			id, p1 = 3, 1
		case *arrow.Float64Type:
			id, p1 = 3, 2
		case *arrow.BinaryType:
			id = 4
		case *arrow.StringType:
			id = 5
		case *arrow.BooleanType:
			id = 6
		case *arrow.Decimal128Type:
			id, p1, p2 = 7, t.Precision, t.Scale
		case *arrow.Date32Type:
			id = 8
		case *arrow.Date64Type:
			id, p1 = 8, 1
		case *arrow.TimestampType:
			id, p1, tz = 10, int32(t.Unit), t.TimeZone
		case *arrow.MapType: // before ListType: a map is also list-like
			id, children = 17, []arrow.Field{t.ElemField()}
		case *arrow.ListType:
			id, children = 12, []arrow.Field{t.ElemField()}
		case *arrow.StructType:
			id, children = 13, t.Fields()
		default:
			return nil, fmt.Errorf("%w: type %s is not supported by decoder ABI 2", engine.ErrDecoder, f.Type)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Name)))
		b = append(b, f.Name...)
		nullable := byte(0)
		if f.Nullable {
			nullable = 1
		}
		b = append(b, id, nullable)
		b = binary.LittleEndian.AppendUint32(b, uint32(p1))
		b = binary.LittleEndian.AppendUint32(b, uint32(p2))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(tz)))
		b = append(b, tz...)
		var err error
		if b, err = EncodeFields(b, children); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// DecodeFields reads what EncodeFields writes (a module's pg_schema),
// all of b.
func DecodeFields(b []byte) ([]arrow.Field, error) {
	r := reader{b: b}
	fields, err := decodeFields(&r, 0)
	if err == nil && !r.done() {
		err = errors.New("trailing bytes after the schema")
	}
	return fields, err
}

func decodeFields(r *reader, depth int) ([]arrow.Field, error) {
	if depth > 64 {
		return nil, errors.New("schema nested too deeply")
	}
	n := r.le32()
	if r.err != nil || n > 1<<16 {
		return nil, errors.New("malformed schema")
	}
	var fields []arrow.Field
	for i := uint32(0); i < n; i++ {
		name := string(r.bytes(int(r.le32())))
		head := r.bytes(2)
		p1, p2 := int32(r.le32()), int32(r.le32())
		tz := string(r.bytes(int(r.le32())))
		if r.err != nil {
			return nil, errors.New("malformed schema")
		}
		children, err := decodeFields(r, depth+1)
		if err != nil {
			return nil, err
		}
		var t arrow.DataType
		switch id := head[0]; {
		case id == 1:
			t = arrow.Null
		case id == 2:
			t = intType(p1, p2 == 1)
		case id == 3 && p1 == 1:
			t = arrow.PrimitiveTypes.Float32
		case id == 3 && p1 == 2:
			t = arrow.PrimitiveTypes.Float64
		case id == 4:
			t = arrow.BinaryTypes.Binary
		case id == 5:
			t = arrow.BinaryTypes.String
		case id == 6:
			t = arrow.FixedWidthTypes.Boolean
		case id == 7:
			t = &arrow.Decimal128Type{Precision: p1, Scale: p2}
		case id == 8 && p1 == 0:
			t = arrow.FixedWidthTypes.Date32
		case id == 8 && p1 == 1:
			t = arrow.FixedWidthTypes.Date64
		case id == 10 && p1 >= 0 && p1 <= 3:
			t = &arrow.TimestampType{Unit: arrow.TimeUnit(p1), TimeZone: tz}
		case id == 12 && len(children) == 1:
			t = arrow.ListOfField(children[0])
		case id == 13:
			t = arrow.StructOf(children...)
		case id == 17 && len(children) == 1:
			st, ok := children[0].Type.(*arrow.StructType)
			if !ok || st.NumFields() != 2 {
				return nil, errors.New("a map's child must be a struct of key and value")
			}
			m := arrow.MapOf(st.Field(0).Type, st.Field(1).Type)
			m.SetItemNullable(st.Field(1).Nullable)
			t = m
		}
		if t == nil {
			return nil, fmt.Errorf("field %q: unsupported type id %d (p1 %d)", name, head[0], p1)
		}
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: head[1] != 0})
	}
	return fields, nil
}

func intType(bits int32, signed bool) arrow.DataType {
	switch {
	case bits == 8 && signed:
		return arrow.PrimitiveTypes.Int8
	case bits == 16 && signed:
		return arrow.PrimitiveTypes.Int16
	case bits == 32 && signed:
		return arrow.PrimitiveTypes.Int32
	case bits == 64 && signed:
		return arrow.PrimitiveTypes.Int64
	case bits == 8:
		return arrow.PrimitiveTypes.Uint8
	case bits == 16:
		return arrow.PrimitiveTypes.Uint16
	case bits == 32:
		return arrow.PrimitiveTypes.Uint32
	case bits == 64:
		return arrow.PrimitiveTypes.Uint64
	}
	return nil
}

// le32 reads a little-endian u32 (the v2 framing).
func (r *reader) le32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// layout is a parsed pg_output of ABI 2.
type layout struct {
	mem   Memory
	alloc memory.Allocator
	nodes [][2]uint32 // length, null count
	bufs  [][2]uint32 // guest address, length
	slab  *memory.Buffer
	used  int            // bytes of slab handed out
	guest *memory.Buffer // the pinned guest memory, when buffers are handed out as they lie (internal/guest's pins)
}

// SlabAlign keeps each buffer carved from the slab 64-byte aligned, as
// Arrow recommends and an allocator's own buffers are.
const SlabAlign = 64

// makeSlab allocates one buffer for all of the batch's output buffers,
// which buffer then carves up (memory.SliceBuffer keeps it alive while any
// column does): one allocation per batch instead of one per buffer (three
// per column), a measurable part of the host's work on small batches. A
// layout whose buffers add up to more than the guest's memory (they
// overlap, so the module is broken or hostile) gets no slab, and each
// buffer is allocated on its own as it is read.
func (l *layout) makeSlab() {
	total := 0
	for _, b := range l.bufs {
		total += (int(b[1]) + SlabAlign - 1) &^ (SlabAlign - 1)
		if total > int(l.mem.Size())+SlabAlign*len(l.bufs) {
			return
		}
	}
	if total == 0 {
		return
	}
	// Uninitialized: buffer overwrites every byte it hands out, alignment
	// gaps included; zeroing the slab first is one more pass over the
	// batch's output.
	l.slab = memory.NewBufferWithAllocator(cmem.Uninitialized(l.alloc, total), l.alloc)
}

// releaseSlab drops the layout's own reference: the columns hold theirs.
func (l *layout) releaseSlab() {
	if l.slab != nil {
		l.slab.Release()
		l.slab = nil
	}
}

// ReadLayout turns a v2 pg_output into arrays of full's fields and
// validates them (the module is not trusted). guest, when not nil, is the
// pinned memory mem is a view of (internal/guest's pins): the buffers are then slices of
// it, unless one is not aligned to GuestAlign (pinned says which);
// otherwise every buffer is copied out of guest memory.
func ReadLayout(out []byte, mem Memory, full *arrow.Schema, alloc memory.Allocator, guest *memory.Buffer) (cols []arrow.Array, rows int, pinned bool, err error) {
	r := reader{b: out}
	rows = int(r.le32())
	l := &layout{mem: ViewOf(mem), alloc: alloc}
	nn := r.le32()
	if r.err != nil || uint64(nn)*8 > uint64(len(out)) {
		return nil, 0, false, fmt.Errorf("%w: malformed output layout", engine.ErrCrashed)
	}
	l.nodes = make([][2]uint32, 0, nn)
	for i := uint32(0); i < nn; i++ {
		l.nodes = append(l.nodes, [2]uint32{r.le32(), r.le32()})
	}
	nb := r.le32()
	if r.err != nil || uint64(nb)*8 > uint64(len(out)) {
		return nil, 0, false, fmt.Errorf("%w: malformed output layout", engine.ErrCrashed)
	}
	l.bufs = make([][2]uint32, 0, nb)
	for i := uint32(0); i < nb; i++ {
		l.bufs = append(l.bufs, [2]uint32{r.le32(), r.le32()})
	}
	if r.err != nil || !r.done() {
		return nil, 0, false, fmt.Errorf("%w: malformed output layout", engine.ErrCrashed)
	}
	if guest != nil && aligned(l.bufs) {
		l.guest, pinned = guest, true
	} else {
		l.makeSlab()
		defer l.releaseSlab()
	}
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	// arrow-go's validation panics on some bad offsets (it slices before it
	// checks): a module's bad layout must fail its batch, not the process.
	defer func() {
		if r := recover(); r != nil {
			release()
			cols, rows, pinned, err = nil, 0, false, fmt.Errorf("%w: invalid output layout: %v", engine.ErrCrashed, r)
		}
	}()
	cols = make([]arrow.Array, 0, full.NumFields())
	for i := range full.NumFields() {
		f := full.Field(i)
		d, err := l.load(f.Type)
		if err != nil {
			release()
			return nil, 0, false, fmt.Errorf("%w: column %q: %v", engine.ErrCrashed, f.Name, err)
		}
		a := array.MakeFromData(d)
		d.Release()
		cols = append(cols, a)
		if n := a.Len(); n != rows {
			release()
			return nil, 0, false, fmt.Errorf("%w: column %q has %d rows, want %d", engine.ErrCrashed, f.Name, n, rows)
		}
		if err := validateColumn(a); err != nil {
			release()
			return nil, 0, false, fmt.Errorf("%w: column %q: %v", engine.ErrCrashed, f.Name, err)
		}
	}
	if len(l.nodes) != 0 || len(l.bufs) != 0 {
		release()
		return nil, 0, false, fmt.Errorf("%w: output layout has more nodes or buffers than the schema", engine.ErrCrashed)
	}
	return cols, rows, pinned, nil
}

func (l *layout) node() ([2]uint32, error) {
	if len(l.nodes) == 0 {
		return [2]uint32{}, errors.New("too few nodes")
	}
	n := l.nodes[0]
	l.nodes = l.nodes[1:]
	if n[1] > n[0] {
		return n, errors.New("null count exceeds length")
	}
	return n, nil
}

// aligned reports whether every non-empty buffer starts at a multiple of
// GuestAlign.
func aligned(bufs [][2]uint32) bool {
	for _, b := range bufs {
		if b[1] != 0 && b[0]%GuestAlign != 0 {
			return false
		}
	}
	return true
}

// buffer is the next buffer (want bytes at least; 0 = any): a slice of the
// pinned guest memory, or a copy in host memory. A zero-length buffer is
// nil.
func (l *layout) buffer(want int) (*memory.Buffer, error) {
	if len(l.bufs) == 0 {
		return nil, errors.New("too few buffers")
	}
	b := l.bufs[0]
	l.bufs = l.bufs[1:]
	if int(b[1]) < want {
		return nil, fmt.Errorf("buffer of %d bytes, want %d", b[1], want)
	}
	if b[1] == 0 {
		return nil, nil
	}
	view, ok := l.mem.Read(b[0], b[1])
	if !ok {
		return nil, errors.New("buffer outside guest memory")
	}
	if l.guest != nil {
		return memory.SliceBuffer(l.guest, int(b[0]), int(b[1])), nil
	}
	if l.slab == nil || l.used+len(view) > l.slab.Len() {
		return CopyBuf(l.alloc, view), nil
	}
	buf := memory.SliceBuffer(l.slab, l.used, len(view))
	copy(buf.Bytes(), view)
	next := l.used + (len(view)+SlabAlign-1)&^(SlabAlign-1)
	clear(l.slab.Bytes()[l.used+len(view) : min(next, l.slab.Len())]) // padding: no stale bytes of an earlier batch
	l.used = next
	return buf, nil
}

func (l *layout) load(t arrow.DataType) (d arrow.ArrayData, err error) {
	n, err := l.node()
	if err != nil {
		return nil, err
	}
	length, nulls := int(n[0]), int(n[1])
	if t.ID() == arrow.NULL {
		return array.NewData(t, length, []*memory.Buffer{nil}, nil, length, 0), nil
	}
	bufs := make([]*memory.Buffer, 0, 3) // validity, then at most offsets and data
	var children []arrow.ArrayData
	defer func() {
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
		for _, c := range children {
			c.Release()
		}
	}()
	validBytes := 0
	if nulls > 0 {
		validBytes = (length + 7) / 8
	}
	valid, err := l.buffer(validBytes)
	if err != nil {
		return nil, err
	}
	bufs = append(bufs, valid)
	// A bitmap given with no nulls is still read by consumers that do not
	// trust the count: it must cover every row and agree with the count.
	if valid != nil {
		if valid.Len() < (length+7)/8 {
			return nil, fmt.Errorf("validity bitmap of %d bytes for %d rows", valid.Len(), length)
		}
		if n := length - bitutil.CountSetBits(valid.Bytes(), 0, length); n != nulls {
			return nil, fmt.Errorf("null count %d, but the validity bitmap has %d nulls", nulls, n)
		}
	}
	switch tt := t.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		offs, err := l.buffer(4 * (length + 1))
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, offs)
		data, err := l.buffer(0)
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, data)
		if err := checkOffsets(offs, length, bufLen(data)); err != nil {
			return nil, err
		}
		if t.ID() == arrow.STRING {
			if err := checkUTF8(offs, length, data); err != nil {
				return nil, err
			}
		}
	case *arrow.StructType:
		for _, f := range tt.Fields() {
			c, err := l.load(f.Type)
			if err != nil {
				return nil, err
			}
			children = append(children, c)
		}
	case arrow.ListLikeType:
		offs, err := l.buffer(4 * (length + 1))
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, offs)
		c, err := l.load(tt.Elem())
		if err != nil {
			return nil, err
		}
		children = append(children, c)
		if err := checkOffsets(offs, length, c.Len()); err != nil {
			return nil, err
		}
	case arrow.FixedWidthDataType:
		data, err := l.buffer(FixedBytes(tt, length))
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, data)
	default:
		return nil, fmt.Errorf("type %s is not supported", t)
	}
	return array.NewData(t, length, bufs, children, nulls, 0), nil
}

// validateColumn is array.ValidateFull(a) for what load has not checked
// itself: of a utf8 column it checked everything (buffer sizes, bitmap and
// null count, checkOffsets, checkUTF8), and arrow-go would check it again,
// the UTF-8 a value at a time.
func validateColumn(a arrow.Array) error {
	if _, ok := a.(*array.String); ok {
		return nil
	}
	return array.ValidateFull(a)
}

// checkUTF8 checks that the n values of a utf8 column, whose offsets
// checkOffsets accepted, are valid UTF-8: all their bytes at once, and
// every value starting on a character's first byte, which together prove
// what checking each value alone would (a character split across two
// values is caught by the second test).
func checkUTF8(offs *memory.Buffer, n int, data *memory.Buffer) error {
	o := arrow.Int32Traits.CastFromBytes(offs.Bytes()[:4*(n+1)])
	lo, hi := o[0], o[n]
	if lo == hi {
		return nil
	}
	vals := data.Bytes()
	if ascii(vals[lo:hi]) { // the common case: every byte starts a character
		return nil
	}
	if !utf8.Valid(vals[lo:hi]) {
		return errors.New("values are not valid UTF-8")
	}
	for i, x := range o[:n] {
		if x < hi && !utf8.RuneStart(vals[x]) {
			return fmt.Errorf("value %d starts inside a UTF-8 character", i)
		}
	}
	return nil
}

// checkOffsets: n+1 non-decreasing int32 offsets from 0..end (arrow-go's
// own validation panics on some bad ones).
func checkOffsets(b *memory.Buffer, n, end int) error {
	if b == nil {
		return errors.New("missing offsets")
	}
	raw := b.Bytes()
	if len(raw) < 4*(n+1) {
		return fmt.Errorf("offsets buffer of %d bytes for %d values", len(raw), n)
	}
	o := arrow.Int32Traits.CastFromBytes(raw[:4*(n+1)])
	if o[0] >= 0 && int(o[n]) <= end && ordered(o) {
		return nil
	}
	prev := int32(0)
	for i, o := range o { // which offset is bad
		if o < prev || int(o) > end {
			return fmt.Errorf("bad offset %d at %d (values end at %d)", o, i, end)
		}
		prev = o
	}
	return nil
}

func bufLen(b *memory.Buffer) int {
	if b == nil {
		return 0
	}
	return b.Len()
}
