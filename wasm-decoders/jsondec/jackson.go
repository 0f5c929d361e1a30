package jsondec

import (
	"math"
	"strconv"
	"strings"
)

// jackson appends the value at the cursor as Jackson's
// copyCurrentStructure writes it, which is what Spark stores when a
// string column receives a non-string value: compact, strings re-escaped
// (only '"', '\\' and control characters), integers as their value,
// floats as Java's Double.toString, non-numeric numbers quoted.
func (d *Decoder) jackson(out []byte) ([]byte, error) {
	p := &d.p
	p.ws()
	switch c := p.peek(); {
	case p.eof():
		return out, p.errorf("unexpected end of input")
	case c == '[':
		out = append(out, '[')
		first := true
		err := p.container(func() error {
			var err error
			if !first {
				out = append(out, ',')
			}
			first = false
			out, err = d.jackson(out)
			return err
		})
		return append(out, ']'), err
	case c == '{':
		out = append(out, '{')
		err := p.members(func(k []byte, first bool) error {
			var err error
			if !first {
				out = append(out, ',')
			}
			out, err = d.jackson(append(quote(out, k), ':'))
			return err
		})
		if err != nil {
			return out, err
		}
		return append(out, '}'), nil
	case c == '"' || c == '\'':
		s, err := p.string()
		if err != nil {
			return out, err
		}
		return quote(out, s), nil
	case p.literal("true"):
		return append(out, "true"...), nil
	case p.literal("false"):
		return append(out, "false"...), nil
	case p.literal("null"):
		return append(out, "null"...), nil
	}
	n, ok := p.number()
	if !ok {
		return out, p.errorf("unexpected %s", p.tokenName())
	}
	switch {
	case n.special == 2:
		return append(out, `"NaN"`...), nil
	case n.special == 1:
		return append(out, `"Infinity"`...), nil
	case n.special == -1:
		return append(out, `"-Infinity"`...), nil
	case n.isInt:
		if string(n.text) == "-0" {
			return append(out, '0'), nil
		}
		return append(out, n.text...), nil
	}
	f, err := strconv.ParseFloat(string(n.text), 64)
	if err != nil && !isRangeErr(err) {
		return out, p.errorf("invalid number %s", n.text)
	}
	if math.IsInf(f, 0) {
		if f > 0 {
			return append(out, `"Infinity"`...), nil
		}
		return append(out, `"-Infinity"`...), nil
	}
	return append(out, javaDouble(f)...), nil
}

func quote(out, s []byte) []byte {
	const hex = "0123456789ABCDEF"
	out = append(out, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// javaDouble formats f like Java's Double.toString: plain notation with at
// least one fractional digit for 1e-3 <= |f| < 1e7, otherwise
// d.dddE[-]n; shortest round-trip digits.
func javaDouble(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±xx
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	digs := strings.Replace(mant, ".", "", 1)
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		if exp >= 0 {
			for len(digs) < exp+2 {
				digs += "0"
			}
			return sign + digs[:exp+1] + "." + digs[exp+1:]
		}
		return sign + "0." + strings.Repeat("0", -exp-1) + digs
	}
	if len(digs) == 1 {
		digs += "0"
	}
	return sign + digs[:1] + "." + digs[1:] + "E" + strconv.Itoa(exp)
}
