package jsondec

import (
	"encoding/base64"
	"math"
	"strconv"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// value decodes the JSON value at the cursor into one slot of b, following
// Spark's JacksonParser.makeConverter for c's type.
func (d *Decoder) value(c *conv, b *arrowlite.Builder) error {
	p := &d.p
	p.ws()
	if p.eof() {
		return p.errorf("unexpected end of input")
	}
	ch := p.peek()
	if ch == 'n' && p.literal("null") {
		b.AppendNull()
		return nil
	}
	switch c.kind {
	case kNull:
		if err := p.skip(); err != nil {
			return err
		}
		b.AppendNull()
		return nil
	case kString:
		if ch == '"' || ch == '\'' {
			s, err := p.string()
			if err != nil {
				return err
			}
			b.AppendBytes(s)
			return nil
		}
		// Spark keeps any other value as its JSON text (Jackson's
		// copyCurrentStructure, so compact and re-encoded).
		d.scratch = d.scratch[:0]
		var err error
		if d.scratch, err = d.jackson(d.scratch); err != nil {
			return err
		}
		b.AppendBytes(d.scratch)
		return nil
	case kBool:
		switch {
		case p.literal("true"):
			b.AppendBool(true)
		case p.literal("false"):
			b.AppendBool(false)
		default:
			return p.errorf("expected a boolean, got %s", p.tokenName())
		}
		return nil
	case kInt, kUint:
		start := p.pos
		n, ok := p.number()
		if !ok || !n.isInt || n.special != 0 {
			p.pos = start
			return p.errorf("expected an integer, got %s", p.tokenName())
		}
		return d.appendInt(c, b, n.text)
	case kFloat:
		return d.float(c, b)
	case kDecimal:
		return d.decimal(c, b)
	case kBinary:
		s, err := p.quoted("a base64 string")
		if err != nil {
			return err
		}
		n := base64.StdEncoding.DecodedLen(len(s))
		d.scratch = append(d.scratch[:0], make([]byte, n)...)
		m, err := base64.StdEncoding.Decode(d.scratch, s)
		if err != nil {
			return p.errorf("invalid base64: %v", err)
		}
		b.AppendBytes(d.scratch[:m])
		return nil
	case kDate:
		s, err := p.quoted("a date string")
		if err != nil {
			return err
		}
		days, ok := parseDate(s)
		if !ok || days < math.MinInt32 || days > math.MaxInt32 {
			return p.errorf("invalid date %q", s)
		}
		if c.t.Unit == arrowlite.DateMillisecond {
			days *= 86400000
		}
		b.AppendInt(days)
		return nil
	case kTimestamp:
		return d.timestamp(c, b)
	case kList:
		if ch != '[' {
			return p.errorf("expected an array, got %s", p.tokenName())
		}
		b.AppendList()
		item := b.Children[0]
		i := 0
		return p.container(func() error {
			err := d.value(c.elem, item)
			if err != nil {
				err = withinIndex(err, i)
			}
			i++
			return err
		})
	case kMap:
		if ch != '{' {
			return p.errorf("expected an object, got %s", p.tokenName())
		}
		b.AppendList()
		entries := b.Children[0]
		keys, vals := entries.Children[0], entries.Children[1]
		return p.members(func(k []byte, _ bool) error {
			keys.AppendBytes(k)
			if err := d.value(c.elem, vals); err != nil {
				return within(err, string(k))
			}
			entries.AppendStruct()
			return nil
		})
	case kStruct:
		if ch != '{' {
			return p.errorf("expected an object, got %s", p.tokenName())
		}
		L := b.Len()
		b.AppendStruct()
		return d.object(c, b.Children, L)
	}
	return p.errorf("unsupported type")
}

// object decodes the object at the cursor into one slot of each child
// builder (all of length L before the call). Unknown members are skipped,
// a repeated member replaces the earlier one (as in Spark), missing
// members are null.
func (d *Decoder) object(c *conv, children []*arrowlite.Builder, L int) error {
	p := &d.p
	clear(c.seen)
	err := p.members(func(k []byte, _ bool) error {
		i, ok := c.names[string(k)]
		if !ok {
			return p.skip()
		}
		if c.seen[i] {
			children[i].Truncate(L)
		}
		c.seen[i] = true
		if err := d.value(c.fields[i], children[i]); err != nil {
			return within(err, c.fields[i].name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ch := range children {
		if ch.Len() == L {
			ch.AppendNull()
		}
	}
	return nil
}

func (d *Decoder) appendInt(c *conv, b *arrowlite.Builder, text []byte) error {
	p := &d.p
	if c.kind == kUint {
		v, err := strconv.ParseUint(string(text), 10, 64)
		if err != nil || v > c.umax {
			return p.errorf("integer %s out of range for %s", text, c.t)
		}
		b.AppendInt(int64(v))
		return nil
	}
	v, err := strconv.ParseInt(string(text), 10, 64)
	min, max := c.min, c.max
	if c.t.BitWidth == 8 {
		max = 255 // Jackson's getByteValue accepts 128..255 and wraps them
	}
	if err != nil || v < min || v > max {
		return p.errorf("integer %s out of range for %s", text, c.t)
	}
	b.AppendInt(v)
	return nil
}

// float accepts numbers, the non-numeric tokens, and the strings "NaN",
// "Infinity", "+Infinity", "+INF", "-Infinity", "-INF" (Spark's rules).
func (d *Decoder) float(c *conv, b *arrowlite.Builder) error {
	p := &d.p
	if ch := p.peek(); ch == '"' || ch == '\'' {
		s, err := p.string()
		if err != nil {
			return err
		}
		switch string(s) {
		case "NaN":
			b.AppendFloat(math.NaN())
		case "Infinity", "+Infinity", "+INF":
			b.AppendFloat(math.Inf(1))
		case "-Infinity", "-INF":
			b.AppendFloat(math.Inf(-1))
		default:
			return p.errorf("expected a number, got string %q", s)
		}
		return nil
	}
	n, ok := p.number()
	if !ok {
		return p.errorf("expected a number, got %s", p.tokenName())
	}
	switch n.special {
	case 2:
		b.AppendFloat(math.NaN())
		return nil
	case 1, -1:
		b.AppendFloat(math.Inf(n.special))
		return nil
	}
	bits := 64
	if c.t.Width() == 4 {
		bits = 32
	}
	// Out-of-range values become ±Inf or 0, as Java's parseDouble does.
	v, err := strconv.ParseFloat(string(n.text), bits)
	if err != nil && !isRangeErr(err) {
		return p.errorf("invalid number %s", n.text)
	}
	b.AppendFloat(v)
	return nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// decimal accepts numbers and numeric strings (commas removed, as Spark's
// decimal parser does), rounding half up to the column's scale.
func (d *Decoder) decimal(c *conv, b *arrowlite.Builder) error {
	p := &d.p
	var text []byte
	if ch := p.peek(); ch == '"' || ch == '\'' {
		s, err := p.string()
		if err != nil {
			return err
		}
		d.scratch = d.scratch[:0]
		for _, x := range s {
			if x != ',' {
				d.scratch = append(d.scratch, x)
			}
		}
		text = d.scratch
	} else {
		start := p.pos
		n, ok := p.number()
		if !ok || n.special != 0 {
			p.pos = start
			return p.errorf("expected a decimal number, got %s", p.tokenName())
		}
		text = n.text
	}
	lo, hi, err := parseDecimal(text, c.t.Precision, c.t.Scale)
	if err != nil {
		return p.errorf("%v", err)
	}
	b.AppendDecimal(lo, hi)
	return nil
}

// timestamp accepts date-time strings and integer seconds since the epoch.
func (d *Decoder) timestamp(c *conv, b *arrowlite.Builder) error {
	p := &d.p
	var micros int64
	if ch := p.peek(); ch == '"' || ch == '\'' {
		s, err := p.string()
		if err != nil {
			return err
		}
		var ok bool
		off := d.tzOff
		if c.t.TimeZone == "" {
			off = 0 // a zone-less (Spark TimestampNTZ) column keeps wall-clock time
		}
		micros, ok = parseTimestamp(s, off, c.t.TimeZone != "")
		if !ok {
			return p.errorf("invalid timestamp %q", s)
		}
	} else {
		start := p.pos
		n, ok := p.number()
		if !ok || !n.isInt || n.special != 0 || c.t.TimeZone == "" {
			p.pos = start
			return p.errorf("expected a timestamp string, got %s", p.tokenName())
		}
		secs, err := strconv.ParseInt(string(n.text), 10, 64)
		if err != nil || secs > math.MaxInt64/1000000 || secs < math.MinInt64/1000000 {
			return p.errorf("timestamp %s out of range", n.text)
		}
		micros = secs * 1e6
	}
	v, ok := fromMicros(micros, c.t.Unit)
	if !ok {
		return p.errorf("timestamp out of range for %s", c.t)
	}
	b.AppendInt(v)
	return nil
}

// fromMicros converts microseconds to unit (flooring for coarser units).
func fromMicros(us int64, unit int16) (int64, bool) {
	switch unit {
	case arrowlite.Second:
		return floorDiv(us, 1e6), true
	case arrowlite.Millisecond:
		return floorDiv(us, 1e3), true
	case arrowlite.Nanosecond:
		if us > math.MaxInt64/1000 || us < math.MinInt64/1000 {
			return 0, false
		}
		return us * 1e3, true
	}
	return us, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
