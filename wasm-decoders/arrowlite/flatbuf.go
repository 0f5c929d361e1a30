package arrowlite

import (
	"encoding/binary"
	"errors"
)

// A minimal FlatBuffers reader and writer, enough for Arrow's Message,
// Schema and RecordBatch tables.

var errFlatbuf = errors.New("arrowlite: malformed flatbuffer")

// fbTable reads one table. Out-of-range reads panic with errFlatbuf; the
// exported entry points recover it into an error.
type fbTable struct {
	buf []byte
	pos int
}

func (t fbTable) u16(at int) int {
	if at < 0 || at+2 > len(t.buf) {
		panic(errFlatbuf)
	}
	return int(binary.LittleEndian.Uint16(t.buf[at:]))
}

func (t fbTable) u32(at int) uint32 {
	if at < 0 || at+4 > len(t.buf) {
		panic(errFlatbuf)
	}
	return binary.LittleEndian.Uint32(t.buf[at:])
}

func (t fbTable) u64(at int) uint64 {
	if at < 0 || at+8 > len(t.buf) {
		panic(errFlatbuf)
	}
	return binary.LittleEndian.Uint64(t.buf[at:])
}

// slot returns the absolute position of field slot, or 0 when absent.
func (t fbTable) slot(slot int) int {
	vt := t.pos - int(int32(t.u32(t.pos)))
	vtLen := t.u16(vt)
	off := 4 + 2*slot
	if off+2 > vtLen {
		return 0
	}
	if o := t.u16(vt + off); o != 0 {
		return t.pos + o
	}
	return 0
}

func (t fbTable) boolAt(slot int, def bool) bool {
	if p := t.slot(slot); p != 0 {
		if p >= len(t.buf) {
			panic(errFlatbuf)
		}
		return t.buf[p] != 0
	}
	return def
}

func (t fbTable) u8At(slot int, def uint8) uint8 {
	if p := t.slot(slot); p != 0 {
		if p >= len(t.buf) {
			panic(errFlatbuf)
		}
		return t.buf[p]
	}
	return def
}

func (t fbTable) i16At(slot int, def int16) int16 {
	if p := t.slot(slot); p != 0 {
		return int16(t.u16(p))
	}
	return def
}

func (t fbTable) i32At(slot int, def int32) int32 {
	if p := t.slot(slot); p != 0 {
		return int32(t.u32(p))
	}
	return def
}

func (t fbTable) i64At(slot int, def int64) int64 {
	if p := t.slot(slot); p != 0 {
		return int64(t.u64(p))
	}
	return def
}

// deref follows the uoffset stored at p.
func (t fbTable) deref(p int) int {
	q := p + int(t.u32(p))
	if q < 0 || q >= len(t.buf) {
		panic(errFlatbuf)
	}
	return q
}

func (t fbTable) tableAt(slot int) (fbTable, bool) {
	p := t.slot(slot)
	if p == 0 {
		return fbTable{}, false
	}
	return fbTable{t.buf, t.deref(p)}, true
}

func (t fbTable) stringAt(slot int) string {
	p := t.slot(slot)
	if p == 0 {
		return ""
	}
	s := t.deref(p)
	n := int(t.u32(s))
	if n < 0 || s+4+n > len(t.buf) {
		panic(errFlatbuf)
	}
	return string(t.buf[s+4 : s+4+n])
}

// tables returns the tables of a vector-of-tables field.
func (t fbTable) tables(slot int) []fbTable {
	p := t.slot(slot)
	if p == 0 {
		return nil
	}
	v := t.deref(p)
	n := int(t.u32(v))
	if n < 0 || v+4+4*n > len(t.buf) {
		panic(errFlatbuf)
	}
	out := make([]fbTable, n)
	for i := range out {
		out[i] = fbTable{t.buf, t.deref(v + 4 + 4*i)}
	}
	return out
}

// fbRoot returns the root table of a flatbuffer.
func fbRoot(buf []byte) fbTable {
	t := fbTable{buf: buf}
	return fbTable{buf, t.deref(0)}
}

// fbObj is something the writer can place in the buffer.
type fbObj interface{ write(w *fbWriter) int }

// fbWriter lays objects out front to back: a table is written before the
// objects it references and its offset slots are patched once they land.
// FlatBuffers only requires that a uoffset points forward, which holds.
type fbWriter struct{ buf []byte }

func (w *fbWriter) pad(align int) {
	for len(w.buf)%align != 0 {
		w.buf = append(w.buf, 0)
	}
}

func (w *fbWriter) patch(at, target int) {
	binary.LittleEndian.PutUint32(w.buf[at:], uint32(target-at))
}

// finish writes root as the root table and returns the buffer.
func (w *fbWriter) finish(root fbObj) []byte {
	w.buf = append(w.buf[:0], 0, 0, 0, 0)
	w.patch(0, root.write(w))
	return w.buf
}

// fbField is one slot of a table: a scalar (size bytes of val) or a
// reference to another object.
type fbField struct {
	size int
	val  uint64
	ref  fbObj
}

func fbU8(v uint8) fbField { return fbField{size: 1, val: uint64(v)} }
func fbBool(v bool) fbField {
	if v {
		return fbU8(1)
	}
	return fbU8(0)
}
func fbI16(v int16) fbField { return fbField{size: 2, val: uint64(uint16(v))} }
func fbI32(v int32) fbField { return fbField{size: 4, val: uint64(uint32(v))} }
func fbI64(v int64) fbField { return fbField{size: 8, val: uint64(v)} }
func fbRef(o fbObj) fbField { return fbField{size: 4, ref: o} }

// fbTableObj is a table; a zero fbField (size 0) leaves its slot absent.
type fbTableObj []fbField

func (t fbTableObj) write(w *fbWriter) int {
	// Inline layout: the soffset to the vtable, then fields largest first
	// so that each is naturally aligned once the table starts on 8 bytes.
	offs := make([]int, len(t))
	size := 4
	for _, want := range []int{8, 4, 2, 1} {
		for i, f := range t {
			if f.size == want {
				for size%want != 0 {
					size++
				}
				offs[i] = size
				size += want
			}
		}
	}
	// vtable: u16 vtable bytes, u16 table bytes, u16 per slot.
	w.pad(2)
	vt := len(w.buf)
	w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(4+2*len(t)))
	w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(size))
	for i, f := range t {
		o := 0
		if f.size != 0 {
			o = offs[i]
		}
		w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(o))
	}
	w.pad(8)
	pos := len(w.buf)
	w.buf = append(w.buf, make([]byte, size)...)
	binary.LittleEndian.PutUint32(w.buf[pos:], uint32(int32(pos-vt)))
	for i, f := range t {
		p := pos + offs[i]
		switch f.size {
		case 1:
			w.buf[p] = byte(f.val)
		case 2:
			binary.LittleEndian.PutUint16(w.buf[p:], uint16(f.val))
		case 4:
			binary.LittleEndian.PutUint32(w.buf[p:], uint32(f.val))
		case 8:
			binary.LittleEndian.PutUint64(w.buf[p:], f.val)
		}
	}
	for i, f := range t {
		if f.ref != nil {
			w.patch(pos+offs[i], f.ref.write(w))
		}
	}
	return pos
}

type fbString string

func (s fbString) write(w *fbWriter) int {
	w.pad(4)
	pos := len(w.buf)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(s)))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, 0)
	return pos
}

// fbTables is a vector of tables.
type fbTables []fbObj

func (v fbTables) write(w *fbWriter) int {
	w.pad(4)
	pos := len(w.buf)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(v)))
	slots := len(w.buf)
	w.buf = append(w.buf, make([]byte, 4*len(v))...)
	for i, o := range v {
		w.patch(slots+4*i, o.write(w))
	}
	return pos
}

// fbStructs16 is a vector of 16-byte structs of two int64 (Arrow's
// FieldNode and Buffer), so elements must start 8-aligned.
type fbStructs16 [][2]int64

func (v fbStructs16) write(w *fbWriter) int {
	for len(w.buf)%8 != 4 {
		w.buf = append(w.buf, 0)
	}
	pos := len(w.buf)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(v)))
	for _, s := range v {
		w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(s[0]))
		w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(s[1]))
	}
	return pos
}
