package protodec

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// occ is one occurrence of a recorded field on the wire: a varint or
// fixed value, or the bounds of a length-delimited one.
type occ struct {
	next int32 // the field's next occurrence, -1 at the end
	wt   protowire.Type
	v    uint64
	s, e int32 // bytes value: b[s:e] of its message's bytes
}

// walker decodes a payload in one pass when it can (onepass.go), else in
// two passes per message (this file): a scan that links
// each recorded field's occurrences (wire order is free, a scalar's last
// occurrence wins, a message's occurrences merge, a repeated field's
// accumulate), then an emit in column order. Both arenas are reused from
// payload to payload, so a message costs no allocation.
type walker struct {
	occs  []occ
	links []int32 // per message being decoded: head and tail of each field's occurrences

	// The one-pass walk (onepass.go), tried first.
	onePass     bool  // a one-pass walk is under way: nested messages take it too
	twoPassOnly bool  // never try it (tests compare the two)
	lens        []int // the row's columns' lengths before it, to truncate back to
}

func wireErr(n int) error {
	return fmt.Errorf("malformed protobuf: %v", protowire.ParseError(n))
}

// message decodes the message bytes b into one slot of each of cols. It
// recurses only as deep as the target schema nests.
func (w *walker) message(m *message, b []byte, cols []*arrowlite.Builder) error {
	if len(b) > math.MaxInt32 {
		return errors.New("protobuf message exceeds 2 GiB")
	}
	ob, lb := len(w.occs), len(w.links)
	for range m.fields {
		w.links = append(w.links, -1, -1)
	}
	for pos := 0; pos < len(b); {
		// consumeTag's one-byte case in line: the compiler does not inline it.
		var num protowire.Number
		var wt protowire.Type
		n := 1
		if c := b[pos]; c < 0x80 && c >= 8 {
			num, wt = protowire.Number(c>>3), protowire.Type(c&7)
		} else if num, wt, n = protowire.ConsumeTag(b[pos:]); n < 0 {
			return wireErr(n)
		}
		pos += n
		fi := m.lookup(num)
		if fi >= 0 && m.accepts[fi]&(1<<wt) == 0 {
			fi = -1 // a known number with another wire type: an unknown field, as in protobuf-java
		}
		if fi < 0 {
			if n = protowire.ConsumeFieldValue(num, wt, b[pos:]); n < 0 {
				return wireErr(n)
			}
			pos += n
			continue
		}
		// The value in line (a call per field costs more than these lines
		// save; the compiler inlines no function this size). Duplicated in
		// walker.once (onepass.go) for the same reason.
		o := occ{wt: wt}
		switch wt {
		case protowire.VarintType:
			if pos < len(b) && b[pos] < 0x80 {
				o.v, n = uint64(b[pos]), 1
			} else {
				o.v, n = protowire.ConsumeVarint(b[pos:])
			}
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b[pos:])
			o.v = uint64(v)
		case protowire.Fixed64Type:
			o.v, n = protowire.ConsumeFixed64(b[pos:])
		default: // BytesType
			if pos < len(b) && b[pos] < 0x80 { // a one-byte length
				if l := int(b[pos]); l <= len(b)-pos-1 {
					o.s, o.e, n = int32(pos+1), int32(pos+1+l), 1+l
					break
				}
			}
			var v []byte
			v, n = protowire.ConsumeBytes(b[pos:])
			o.s = int32(pos + n - len(v))
			o.e = o.s + int32(len(v))
		}
		o.next = -1
		if n < 0 {
			return wireErr(n)
		}
		pos += n
		idx := int32(len(w.occs))
		w.occs = append(w.occs, o)
		h := lb + 2*fi
		if w.links[h] < 0 {
			w.links[h] = idx
		} else {
			w.occs[w.links[h+1]].next = idx
		}
		w.links[h+1] = idx
	}
	for fi, f := range m.fields {
		if f.target < 0 {
			continue
		}
		head, tail := w.links[lb+2*fi], w.links[lb+2*fi+1]
		if f.oneof >= 0 && tail >= 0 {
			for _, k := range m.oneofs[f.oneof] {
				if w.links[lb+2*k+1] > tail { // a later member of the oneof replaced this one
					head, tail = -1, -1
					break
				}
			}
		}
		var err error
		if f.scalar && tail >= 0 { // the common case, without field's dispatch
			err = w.last(f, b, w.occs[tail], cols[f.target])
		} else {
			err = w.field(f, b, head, tail, cols[f.target])
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	for _, j := range m.missing {
		cols[j].AppendNull()
	}
	w.occs, w.links = w.occs[:ob], w.links[:lb]
	return nil
}

// field writes the slot of f from its occurrences head..tail (-1: none).
func (w *walker) field(f *field, b []byte, head, tail int32, col *arrowlite.Builder) error {
	switch {
	case f.kind == kMap:
		col.AppendList()
		entries := col.Children[0]
		for o := head; o >= 0; o = w.occs[o].next {
			oc := w.occs[o]
			if err := w.entry(f, b[oc.s:oc.e], entries); err != nil {
				return err
			}
		}
	case f.list:
		col.AppendList()
		items := col.Children[0]
		for o := head; o >= 0; o = w.occs[o].next {
			oc := w.occs[o]
			var err error
			if oc.wt == protowire.BytesType && f.packable {
				err = w.packed(f, b[oc.s:oc.e], items)
			} else {
				err = w.value(f, b, oc, items)
			}
			if err != nil {
				return err
			}
		}
	case tail < 0:
		if f.def != nil {
			appendConstant(f, f.def, col)
		} else {
			col.AppendNull()
		}
	case (f.kind == kMessage || f.kind == kTimestamp) && head != tail:
		// A message given more than once is their merge, which is what
		// decoding the concatenation of their bytes gives.
		var merged []byte
		for o := head; o >= 0; o = w.occs[o].next {
			merged = append(merged, b[w.occs[o].s:w.occs[o].e]...)
		}
		return w.value(f, merged, occ{s: 0, e: int32(len(merged))}, col)
	default:
		return w.last(f, b, w.occs[tail], col)
	}
	return nil
}

// last writes the slot of a singular field from its last occurrence oc.
func (w *walker) last(f *field, b []byte, oc occ, col *arrowlite.Builder) error {
	if isZero(f, oc) {
		col.AppendNull() // proto3 without presence: a zero is not set, and Spark writes null
		return nil
	}
	return w.value(f, b, oc, col)
}

func isZero(f *field, oc occ) bool {
	if f.presence {
		return false // explicit presence: a zero on the wire is a value
	}
	switch f.wire {
	case protowire.BytesType:
		return oc.s == oc.e
	case protowire.VarintType:
		switch f.kind {
		case kInt32, kSint32, kEnum:
			return uint32(oc.v) == 0
		}
	}
	return oc.v == 0 // a float's zero is +0 only (its bits), as in protobuf-java
}

// value writes one value of f.
func (w *walker) value(f *field, b []byte, oc occ, col *arrowlite.Builder) error {
	switch f.kind {
	case kBool:
		col.AppendBool(oc.v != 0)
	case kInt32:
		appendInt(f, int64(int32(oc.v)), col)
	case kSint32:
		appendInt(f, protowire.DecodeZigZag(uint64(uint32(oc.v))), col)
	case kInt64:
		appendInt(f, int64(oc.v), col)
	case kSint64:
		appendInt(f, protowire.DecodeZigZag(oc.v), col)
	case kFixed32:
		appendInt(f, int64(int32(uint32(oc.v))), col)
	case kFixed64:
		appendInt(f, int64(oc.v), col)
	case kFloat:
		col.AppendFloat(float64(math.Float32frombits(uint32(oc.v))))
	case kDouble:
		col.AppendFloat(math.Float64frombits(oc.v))
	case kString:
		s := b[oc.s:oc.e]
		if !utf8.Valid(s) {
			return errors.New("invalid UTF-8 in a protobuf string")
		}
		col.AppendBytes(s)
	case kBytes:
		col.AppendBytes(b[oc.s:oc.e])
	case kEnum:
		if f.toInt {
			col.AppendInt(int64(int32(oc.v)))
		} else {
			col.AppendString(f.enum.lookup(int32(oc.v)))
		}
	case kMessage:
		col.AppendStruct()
		if w.onePass {
			return w.once(f.msg, b[oc.s:oc.e], col.Children)
		}
		return w.message(f.msg, b[oc.s:oc.e], col.Children)
	case kTimestamp:
		return timestamp(b[oc.s:oc.e], col)
	}
	return nil
}

func appendInt(f *field, v int64, col *arrowlite.Builder) {
	if f.toFloat {
		col.AppendFloat(float64(v))
	} else {
		col.AppendInt(v)
	}
}

func appendConstant(f *field, c *constant, col *arrowlite.Builder) {
	switch f.kind {
	case kBool:
		col.AppendBool(c.i != 0)
	case kFloat, kDouble:
		col.AppendFloat(c.f)
	case kString, kBytes:
		col.AppendBytes(c.s)
	case kEnum:
		if f.toInt {
			col.AppendInt(c.i)
		} else {
			col.AppendBytes(c.s)
		}
	default:
		appendInt(f, c.i, col)
	}
}

// consumeTag is protowire.ConsumeTag with the one-byte tag (field numbers
// 1 to 15, most fields of most messages) decoded in line.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0] < 0x80 && b[0] >= 8 { // field number 0 is invalid: ConsumeTag says so
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// consumeVarint is protowire.ConsumeVarint with the one-byte varint (0 to
// 127) decoded in line.
func consumeVarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return protowire.ConsumeVarint(b)
}

// packed writes the values of a packed run. Integers written as integers,
// the common case, skip value's dispatch.
func (w *walker) packed(f *field, b []byte, items *arrowlite.Builder) error {
	if f.wire == protowire.VarintType && !f.toFloat && (f.kind == kInt32 || f.kind == kInt64) {
		for len(b) > 0 {
			v, n := consumeVarint(b)
			if n < 0 {
				return wireErr(n)
			}
			b = b[n:]
			if f.kind == kInt32 {
				items.AppendInt(int64(int32(v)))
			} else {
				items.AppendInt(int64(v))
			}
		}
		return nil
	}
	for len(b) > 0 {
		oc := occ{}
		var n int
		switch f.wire {
		case protowire.VarintType:
			oc.v, n = consumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			oc.v = uint64(v)
		default:
			oc.v, n = protowire.ConsumeFixed64(b)
		}
		if n < 0 {
			return wireErr(n)
		}
		b = b[n:]
		if err := w.value(f, nil, oc, items); err != nil {
			return err
		}
	}
	return nil
}

// entry writes one map entry; a missing key or value is its type's
// default, as protobuf-java's map entries give it.
func (w *walker) entry(f *field, b []byte, entries *arrowlite.Builder) error {
	var key, val occ
	hasKey, hasVal := false, false
	for pos := 0; pos < len(b); {
		num, wt, n := consumeTag(b[pos:])
		if n < 0 {
			return wireErr(n)
		}
		pos += n
		var o occ
		switch wt {
		case protowire.VarintType:
			o.v, n = consumeVarint(b[pos:])
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b[pos:])
			o.v = uint64(v)
		case protowire.Fixed64Type:
			o.v, n = protowire.ConsumeFixed64(b[pos:])
		case protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b[pos:])
			o.s = int32(pos + n - len(v))
			o.e = o.s + int32(len(v))
		default:
			n = protowire.ConsumeFieldValue(num, wt, b[pos:])
		}
		if n < 0 {
			return wireErr(n)
		}
		pos += n
		switch {
		case num == 1 && wt == f.key.wire:
			key, hasKey = o, true
		case num == 2 && wt == f.val.wire:
			val, hasVal = o, true
		}
	}
	kc, vc := entries.Children[0], entries.Children[1]
	if hasKey {
		if err := w.value(f.key, b, key, kc); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
	} else {
		appendConstant(f.key, &f.key.zero, kc)
	}
	switch {
	case hasVal:
		if err := w.value(f.val, b, val, vc); err != nil {
			return fmt.Errorf("map value: %w", err)
		}
	case f.val.kind == kMessage || f.val.kind == kTimestamp:
		if err := w.value(f.val, nil, occ{}, vc); err != nil { // the default instance
			return fmt.Errorf("map value: %w", err)
		}
	default:
		appendConstant(f.val, &f.val.zero, vc)
	}
	entries.AppendStruct()
	return nil
}

// timestamp writes a google.protobuf.Timestamp as microseconds, as Spark
// does: seconds * 10^6 + nanos / 1000 (truncated).
func timestamp(b []byte, col *arrowlite.Builder) error {
	var secs int64
	var nanos int32
	for pos := 0; pos < len(b); {
		num, wt, n := consumeTag(b[pos:])
		if n < 0 {
			return wireErr(n)
		}
		pos += n
		if (num == 1 || num == 2) && wt == protowire.VarintType {
			v, n := consumeVarint(b[pos:])
			if n < 0 {
				return wireErr(n)
			}
			pos += n
			if num == 1 {
				secs = int64(v)
			} else {
				nanos = int32(v)
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, wt, b[pos:]); n < 0 {
			return wireErr(n)
		}
		pos += n
	}
	hi, lo := bits.Mul64(uint64(absInt(secs)), 1_000_000)
	if hi != 0 || lo > math.MaxInt64-1_000_000 {
		return fmt.Errorf("timestamp seconds %d out of range", secs)
	}
	col.AppendInt(secs*1_000_000 + int64(nanos)/1000)
	return nil
}

func absInt(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
