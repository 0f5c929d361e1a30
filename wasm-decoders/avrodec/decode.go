package avrodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// Decoder decodes Avro datums; it implements sdk.Decoder.
type Decoder struct {
	root   *step
	r      reader
	writer *node  // JSON encoding: the schema its datums are transcoded by
	buf    []byte // JSON encoding: the datum transcoded to binary
}

// New is the sdk.Factory of the Avro decoder. Options:
//
//	avro_schema:        the Avro schema as JSON (required; a record). The
//	                    columns are derived from it; without
//	                    avro_writer_schema it is also the writer's schema.
//	avro_writer_schema: the schema the payloads were written with, when it
//	                    differs from avro_schema (an older or newer
//	                    revision): resolved to avro_schema by Avro's rules.
//	avro_encoding:      "binary" (default) or "json" (Avro's JSON encoding).
func New(cfg sdk.Config) (sdk.Decoder, *arrowlite.Schema, error) {
	var text, writerText string
	jsonEnc := false
	for k, v := range cfg.Options {
		switch k {
		case "avro_schema":
			text = v
		case "avro_writer_schema":
			writerText = v
		case "avro_encoding":
			switch strings.ToLower(v) {
			case "binary":
			case "json":
				jsonEnc = true
			default:
				return nil, nil, fmt.Errorf("avro decoder: avro_encoding=%q is not binary or json", v)
			}
		default:
			return nil, nil, fmt.Errorf("avro decoder: unknown option %q (expected avro_schema, avro_writer_schema, avro_encoding)", k)
		}
	}
	if text == "" {
		return nil, nil, errors.New("avro decoder: option avro_schema is required")
	}
	n, err := parseSchema(text)
	if err != nil {
		return nil, nil, fmt.Errorf("avro decoder: %w", err)
	}
	if n.Kind != aRecord {
		return nil, nil, fmt.Errorf("avro decoder: the top-level avro type must be a record, not %s", describe(n))
	}
	schema := cfg.Schema
	if schema == nil {
		fields, err := sqlFields(n)
		if err != nil {
			return nil, nil, fmt.Errorf("avro decoder: %w", err)
		}
		schema = &arrowlite.Schema{Fields: fields}
	}
	target := arrowlite.StructType(schema.Fields...)
	w := n
	var root *step
	if writerText != "" {
		if w, err = parseSchema(writerText); err != nil {
			return nil, nil, fmt.Errorf("avro decoder: avro_writer_schema: %w", err)
		}
		root, err = resolve(w, n, target)
	} else {
		root, err = plan(n, target)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("avro decoder: %w", err)
	}
	d := &Decoder{root: root}
	if jsonEnc {
		d.writer = w
	}
	return d, schema, nil
}

// Decode implements sdk.Decoder.
func (d *Decoder) Decode(payload []byte, cols []*arrowlite.Builder) error {
	if d.writer != nil {
		v, err := parseJSON(payload)
		if err != nil {
			return err
		}
		if d.buf, err = encodeJSON(d.buf[:0], d.writer, v, false); err != nil {
			return err
		}
		payload = d.buf
	}
	d.r = reader{b: payload, empties: emptyItemsBase + emptyItemsPerByte*int64(len(payload))}
	if err := d.fields(d.root, cols); err != nil {
		return err
	}
	if d.r.pos != len(payload) {
		return fmt.Errorf("%d trailing bytes after the avro datum", len(payload)-d.r.pos)
	}
	return nil
}

var errTruncated = errors.New("avro datum is truncated")

// reader reads the Avro binary encoding.
type reader struct {
	b       []byte
	pos     int
	empties int64 // items of zero bytes (nulls, empty records) the datum may still hold
}

// Array and map items that take no bytes (null, a record of nulls) cannot
// be bounded by the bytes left; each datum may hold this many of them in
// all, so that what one payload makes the decoder allocate stays
// proportional to its size (a count of 2^31 such items in 5 bytes fails).
const (
	emptyItemsBase    = 1 << 12
	emptyItemsPerByte = 64
)

func (r *reader) long() (int64, error) {
	var u uint64
	for shift := uint(0); shift < 70; shift += 7 {
		if r.pos >= len(r.b) {
			return 0, errTruncated
		}
		c := r.b[r.pos]
		r.pos++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errors.New("avro varint longer than 10 bytes")
}

func (r *reader) int() (int32, error) {
	v, err := r.long()
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("avro int %d out of range", v)
	}
	return int32(v), nil
}

func (r *reader) fixed(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.pos {
		return nil, errTruncated
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

func (r *reader) bytes() ([]byte, error) {
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("negative avro length %d", n)
	}
	if n > int64(len(r.b)-r.pos) {
		return nil, errTruncated
	}
	return r.fixed(int(n))
}

// blockCount reads the next block count of an array or map (0 at the end).
// Counts are bounded by the bytes left (or, for zero-size items, by
// reader.empties) so a hostile count cannot make the decoder spin or
// allocate without limit.
func (r *reader) blockCount(itemMin int) (int, error) {
	n, err := r.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			return 0, errors.New("invalid avro block count")
		}
		n = -n
		if _, err := r.long(); err != nil { // block size in bytes
			return 0, err
		}
	}
	if itemMin > 0 && n > int64(len(r.b)-r.pos)/int64(itemMin) {
		return 0, fmt.Errorf("avro block of %d items exceeds the datum", n)
	}
	if itemMin == 0 {
		if n > r.empties {
			return 0, fmt.Errorf("avro block of %d zero-size items exceeds the datum (at most %d + %d per byte)",
				n, emptyItemsBase, emptyItemsPerByte)
		}
		r.empties -= n
	}
	return int(n), nil
}

func (d *Decoder) fields(s *step, cols []*arrowlite.Builder) error {
	for i, f := range s.n.Fields {
		if s.target[i] < 0 {
			if err := d.skip(f.Type); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			continue
		}
		if err := d.value(s.Fields[i], cols[s.target[i]]); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	for _, j := range s.missing {
		cols[j].AppendNull()
	}
	for _, df := range s.defaults {
		saved := d.r
		d.r = reader{b: df.datum, empties: emptyItemsBase}
		err := d.value(df.st, cols[df.col])
		d.r = saved
		if err != nil {
			return fmt.Errorf("default of %s: %w", s.t.Children[df.col].Name, err)
		}
	}
	return nil
}

// value decodes one datum of s.n into one slot of b.
func (d *Decoder) value(s *step, b *arrowlite.Builder) error {
	r := &d.r
	if s.wrap != nil {
		b.AppendStruct()
		for j, c := range b.Children {
			if j != s.member {
				c.AppendNull()
			}
		}
		return d.value(s.wrap, b.Children[s.member])
	}
	switch s.n.Kind {
	case aNull:
		b.AppendNull()
	case aBool:
		v, err := r.fixed(1)
		if err != nil {
			return err
		}
		b.AppendBool(v[0] == 1) // Java's BinaryDecoder: only 1 is true
	case aInt:
		v, err := r.int()
		if err != nil {
			return err
		}
		appendNumber(b, int64(v))
	case aLong:
		v, err := r.long()
		if err != nil {
			return err
		}
		if s.t.ID == arrowlite.Timestamp {
			if s.mul > 1 && (v > math.MaxInt64/s.mul || v < math.MinInt64/s.mul) {
				return fmt.Errorf("timestamp %d out of range for %s", v, s.t)
			}
			v = floorDiv(v*s.mul, s.div)
		}
		appendNumber(b, v)
	case aFloat:
		v, err := r.fixed(4)
		if err != nil {
			return err
		}
		b.AppendFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(v))))
	case aDouble:
		v, err := r.fixed(8)
		if err != nil {
			return err
		}
		b.AppendFloat(math.Float64frombits(binary.LittleEndian.Uint64(v)))
	case aBytes, aString, aFixed:
		var v []byte
		var err error
		if s.n.Kind == aFixed {
			v, err = r.fixed(s.n.Size)
		} else {
			v, err = r.bytes()
		}
		if err != nil {
			return err
		}
		switch s.t.ID {
		case arrowlite.Decimal:
			return appendDecimal(b, v, s.t.Precision)
		case arrowlite.Utf8:
			if !utf8.Valid(v) {
				return errors.New("invalid UTF-8 in avro string")
			}
		}
		b.AppendBytes(v)
	case aEnum:
		i, err := r.int()
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(s.syms) {
			return fmt.Errorf("avro enum index %d out of range", i)
		}
		if s.syms[i] == "" {
			return fmt.Errorf("avro enum symbol %q is not in the reader's enum, which has no default", s.n.Symbols[i])
		}
		b.AppendString(s.syms[i])
	case aRecord:
		b.AppendStruct()
		return d.fields(s, b.Children)
	case aArray:
		b.AppendList()
		return d.blocks(s.n.Items.MinSize, func() error { return d.value(s.elem, b.Children[0]) })
	case aMap:
		b.AppendList()
		entries := b.Children[0]
		return d.blocks(1+s.n.Items.MinSize, func() error {
			k, err := r.bytes()
			if err != nil {
				return err
			}
			if !utf8.Valid(k) {
				return errors.New("invalid UTF-8 in avro map key")
			}
			entries.Children[0].AppendBytes(k)
			if err := d.value(s.elem, entries.Children[1]); err != nil {
				return err
			}
			entries.AppendStruct()
			return nil
		})
	case aUnion:
		i, err := r.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(s.Branches)) {
			return fmt.Errorf("avro union index %d out of range", i)
		}
		if s.bad != nil && s.bad[i] != nil {
			return s.bad[i]
		}
		bs := s.Branches[i]
		if s.members == nil {
			if bs == nil {
				b.AppendNull()
				return nil
			}
			return d.value(bs, b)
		}
		if bs == nil {
			b.AppendNull() // a null struct (nulls its members too)
			return nil
		}
		b.AppendStruct()
		m := s.members[i]
		for j, c := range b.Children {
			if j != m {
				c.AppendNull()
			}
		}
		return d.value(bs, b.Children[m])
	}
	return nil
}

// blocks reads the blocks of an array or map, calling item per element.
func (d *Decoder) blocks(itemMin int, item func() error) error {
	for {
		n, err := d.r.blockCount(itemMin)
		if err != nil || n == 0 {
			return err
		}
		for ; n > 0; n-- {
			if err := item(); err != nil {
				return err
			}
		}
	}
}

// skip reads past one datum of n.
func (d *Decoder) skip(n *node) error {
	r := &d.r
	var err error
	switch n.Kind {
	case aNull:
	case aBool:
		_, err = r.fixed(1)
	case aInt, aLong, aEnum:
		_, err = r.long()
	case aFloat:
		_, err = r.fixed(4)
	case aDouble:
		_, err = r.fixed(8)
	case aFixed:
		_, err = r.fixed(n.Size)
	case aBytes, aString:
		_, err = r.bytes()
	case aRecord:
		for _, f := range n.Fields {
			if err = d.skip(f.Type); err != nil {
				return err
			}
		}
	case aArray:
		err = d.blocks(n.Items.MinSize, func() error { return d.skip(n.Items) })
	case aMap:
		err = d.blocks(1+n.Items.MinSize, func() error {
			if _, err := r.bytes(); err != nil {
				return err
			}
			return d.skip(n.Items)
		})
	case aUnion:
		var i int64
		if i, err = r.long(); err == nil {
			if i < 0 || i >= int64(len(n.Branches)) {
				return fmt.Errorf("avro union index %d out of range", i)
			}
			err = d.skip(n.Branches[i])
		}
	}
	return err
}

// appendNumber appends an Avro int or long to an Int, Float, Date or
// Timestamp column.
func appendNumber(b *arrowlite.Builder, v int64) {
	switch b.Type.ID {
	case arrowlite.FloatingPoint:
		b.AppendFloat(float64(v))
	case arrowlite.Date:
		if b.Type.Unit == arrowlite.DateMillisecond {
			v *= 86400000
		}
		b.AppendInt(v)
	default:
		b.AppendInt(v)
	}
}

// appendDecimal appends a big-endian two's complement unscaled value.
func appendDecimal(b *arrowlite.Builder, v []byte, precision int32) error {
	if len(v) == 0 {
		return errors.New("empty avro decimal")
	}
	neg := v[0]&0x80 != 0
	ext := byte(0)
	if neg {
		ext = 0xff
	}
	for len(v) > 16 { // sign-extension bytes may pad the value
		if v[0] != ext {
			return errors.New("avro decimal exceeds 128 bits")
		}
		v = v[1:]
	}
	var buf [16]byte
	for i := range buf {
		buf[i] = ext
	}
	copy(buf[16-len(v):], v)
	hi := int64(binary.BigEndian.Uint64(buf[:8]))
	lo := binary.BigEndian.Uint64(buf[8:])
	if !fitsPrecision(lo, hi, precision) {
		return fmt.Errorf("avro decimal does not fit precision %d", precision)
	}
	b.AppendDecimal(lo, hi)
	return nil
}

// fitsPrecision reports |hi:lo| < 10^precision.
func fitsPrecision(lo uint64, hi int64, precision int32) bool {
	if hi < 0 { // negate
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
	}
	// Compare the unsigned 128-bit magnitude with 10^precision.
	plo, phi := uint64(1), uint64(0)
	for i := int32(0); i < precision; i++ {
		// (phi:plo) *= 10
		h1, l1 := bits.Mul64(plo, 10)
		phi = phi*10 + h1
		plo = l1
	}
	uhi := uint64(hi)
	return uhi < phi || (uhi == phi && lo < plo)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
