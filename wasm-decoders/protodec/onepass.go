package protodec

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// The one-pass walk writes each field where it meets it on the wire. Every
// column gets exactly one slot per message whatever the order its fields
// come in, so that is right as long as no singular field (nor a second
// member of a oneof) comes twice: the wire rules then make the last one win
// (a message: the merge), which only the two passes of walker.message
// settle. Meeting that, or any error, the walk is abandoned, the row's
// columns are truncated back and the two passes decode it, so both give the
// same rows and the same errors (TestProtobufOnePassEqualsTwoPasses).

// errRevisit abandons a one-pass walk.
var errRevisit = errors.New("protodec: decode in two passes")

// maxOnePassFields bounds the fields and oneofs a message may have for the
// one-pass walk: each has a bit in a uint64.
const maxOnePassFields = 64

// row decodes one payload: in one pass if it can, else in two.
func (w *walker) row(m *message, b []byte, cols []*arrowlite.Builder) error {
	if !w.twoPassOnly {
		w.lens = w.lens[:0]
		for _, c := range cols {
			w.lens = append(w.lens, c.Len())
		}
		w.onePass = true
		err := w.once(m, b, cols)
		w.onePass = false
		if err == nil {
			return nil
		}
		for i, c := range cols {
			c.Truncate(w.lens[i])
		}
	}
	w.occs, w.links = w.occs[:0], w.links[:0] // a failed row leaves them as they were
	return w.message(m, b, cols)
}

// once decodes the message bytes b into one slot of each of cols, in one
// pass, or returns an error (errRevisit when two passes are needed).
func (w *walker) once(m *message, b []byte, cols []*arrowlite.Builder) error {
	if len(m.fields) > maxOnePassFields || len(m.oneofs) > maxOnePassFields {
		return errRevisit
	}
	var seen, oneofs uint64
	for pos := 0; pos < len(b); {
		var num protowire.Number
		var wt protowire.Type
		n := 1
		if c := b[pos]; c < 0x80 && c >= 8 {
			num, wt = protowire.Number(c>>3), protowire.Type(c&7)
		} else if num, wt, n = protowire.ConsumeTag(b[pos:]); n < 0 {
			return errRevisit
		}
		pos += n
		fi := m.lookup(num)
		if fi < 0 || m.accepts[fi]&(1<<wt) == 0 {
			if n = protowire.ConsumeFieldValue(num, wt, b[pos:]); n < 0 {
				return errRevisit
			}
			pos += n
			continue
		}
		// The value in line (a call per field costs more than these lines
		// save; the compiler inlines no function this size). Duplicated in
		// walker.message for the same reason.
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
		if n < 0 {
			return errRevisit
		}
		pos += n
		f := m.fields[fi]
		bit := uint64(1) << fi
		first := seen&bit == 0
		seen |= bit
		if f.oneof >= 0 {
			if oneofs&(1<<f.oneof) != 0 {
				return errRevisit // a member again: the last one wins
			}
			oneofs |= 1 << f.oneof
		}
		if f.target < 0 {
			continue
		}
		col := cols[f.target]
		var err error
		switch {
		case f.kind == kMap:
			if first {
				col.AppendList()
			}
			err = w.entry(f, b[o.s:o.e], col.Children[0])
		case f.list:
			if first {
				col.AppendList()
			}
			if o.wt == protowire.BytesType && f.packable {
				err = w.packed(f, b[o.s:o.e], col.Children[0])
			} else {
				err = w.value(f, b, o, col.Children[0])
			}
		case !first:
			return errRevisit // a singular field again: the last one (a message: the merge) wins
		default:
			err = w.last(f, b, o, col)
		}
		if err != nil {
			return err
		}
	}
	for fi, f := range m.fields {
		if f.target < 0 || seen&(1<<fi) != 0 {
			continue
		}
		col := cols[f.target]
		switch {
		case f.kind == kMap || f.list:
			col.AppendList()
		case f.def != nil:
			appendConstant(f, f.def, col)
		default:
			col.AppendNull()
		}
	}
	for _, j := range m.missing {
		cols[j].AppendNull()
	}
	return nil
}
