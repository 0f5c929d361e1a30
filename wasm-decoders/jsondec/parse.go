package jsondec

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// parser is a JSON scanner over one payload with the leniencies of Spark's
// default Jackson options: single-quoted strings and the non-numeric
// numbers NaN, Infinity, +Infinity, -Infinity, INF, +INF, -INF. Everything
// else is strict JSON (no comments, no unquoted names, no leading zeros,
// no unescaped control characters).
type parser struct {
	buf   []byte
	pos   int
	depth int
	str   []byte // unescaped string scratch
}

func (p *parser) reset(b []byte) { p.buf, p.pos, p.depth = b, 0, 0 }

func (p *parser) eof() bool { return p.pos >= len(p.buf) }

func (p *parser) peek() byte {
	if p.pos < len(p.buf) {
		return p.buf[p.pos]
	}
	return 0
}

func (p *parser) ws() {
	for p.pos < len(p.buf) {
		switch p.buf[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// end requires that only whitespace follows the top-level value.
func (p *parser) end() error {
	p.ws()
	if !p.eof() {
		return p.errorf("unexpected %s after the JSON value", p.tokenName())
	}
	return nil
}

func (p *parser) errorf(format string, args ...any) error {
	return &pathError{msg: fmt.Sprintf(format, args...) + fmt.Sprintf(" at offset %d", p.pos)}
}

// tokenName names the token at the cursor for error messages.
func (p *parser) tokenName() string {
	switch c := p.peek(); {
	case p.eof():
		return "end of input"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"' || c == '\'':
		return "a string"
	case c == '-' || c == '+' || (c >= '0' && c <= '9') || c == 'N' || c == 'I':
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return fmt.Sprintf("character %q", rune(c))
	}
}

// literal consumes word if it is next and not followed by a name character.
func (p *parser) literal(word string) bool {
	end := p.pos + len(word)
	if end > len(p.buf) || string(p.buf[p.pos:end]) != word {
		return false
	}
	if end < len(p.buf) && isNameChar(p.buf[end]) {
		return false
	}
	p.pos = end
	return true
}

func isNameChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *parser) expect(c byte) error {
	p.ws()
	if p.peek() != c || p.eof() {
		return p.errorf("expected %q, got %s", c, p.tokenName())
	}
	p.pos++
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("nesting deeper than %d", maxDepth)
	}
	return nil
}

// numTok is a scanned number token.
type numTok struct {
	text  []byte
	isInt bool
	// special is +1/-1 for an infinity, 2 for NaN, 0 for a finite number.
	special int
}

// number scans a number token (including the non-numeric ones).
func (p *parser) number() (numTok, bool) {
	start := p.pos
	if c := p.peek(); c == 'N' || c == 'I' || c == '+' || c == '-' && p.pos+1 < len(p.buf) && p.buf[p.pos+1] == 'I' {
		return p.special(start)
	}
	i := p.pos
	b := p.buf
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return numTok{}, false
	}
	isInt := true
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		if i = skipDigits(b, i); i == d {
			return numTok{}, false
		}
		isInt = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		if i = skipDigits(b, i); i == d {
			return numTok{}, false
		}
		isInt = false
	}
	if i < len(b) && isNameChar(b[i]) || i < len(b) && b[i] == '.' {
		return numTok{}, false // e.g. 01, 1.2.3, 12abc
	}
	p.pos = i
	return numTok{text: b[start:i], isInt: isInt}, true
}

// skipDigits is the index after the run of ASCII digits at b[i:].
func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// special scans the non-numeric numbers.
func (p *parser) special(start int) (numTok, bool) {
	for _, s := range [...]struct {
		w string
		v int
	}{{"NaN", 2}, {"Infinity", 1}, {"+Infinity", 1}, {"-Infinity", -1}, {"INF", 1}, {"+INF", 1}, {"-INF", -1}} {
		if p.literal(s.w) {
			return numTok{text: p.buf[start:p.pos], special: s.v}, true
		}
	}
	return numTok{}, false
}

// string scans a string at the cursor ('"' or '\” quoted) and returns its
// unescaped bytes, valid until the next call.
func (p *parser) string() ([]byte, error) {
	q := p.buf[p.pos]
	p.pos++
	start := p.pos
	// Fast path: no escapes. Plain ASCII is skipped 8 bytes at a time
	// (long text and padding members are most of a payload's bytes), and
	// UTF-8 is validated only if a string has a byte >= 0x80.
	ascii := true
	for i := skipPlain(p.buf, start, q); i < len(p.buf); i = skipPlain(p.buf, i+1, q) {
		c := p.buf[i]
		if c == q {
			p.pos = i + 1
			s := p.buf[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, p.errorf("invalid UTF-8 in string")
			}
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.pos = i
			return nil, p.errorf("unescaped control character in string")
		}
		ascii = false // c >= 0x80
	}
	p.str = p.str[:0]
	i := start
	for {
		if i >= len(p.buf) {
			p.pos = i
			return nil, p.errorf("unterminated string")
		}
		c := p.buf[i]
		switch {
		case c == q:
			p.pos = i + 1
			if !utf8.Valid(p.str) {
				return nil, p.errorf("invalid UTF-8 in string")
			}
			return p.str, nil
		case c < 0x20:
			p.pos = i
			return nil, p.errorf("unescaped control character in string")
		case c != '\\':
			p.str = append(p.str, c)
			i++
			continue
		}
		if i+1 >= len(p.buf) {
			p.pos = i
			return nil, p.errorf("unterminated string")
		}
		e := p.buf[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			p.str = append(p.str, e)
		case '\'':
			if q != '\'' {
				p.pos = i - 2
				return nil, p.errorf("invalid escape \\'")
			}
			p.str = append(p.str, e)
		case 'b':
			p.str = append(p.str, '\b')
		case 'f':
			p.str = append(p.str, '\f')
		case 'n':
			p.str = append(p.str, '\n')
		case 'r':
			p.str = append(p.str, '\r')
		case 't':
			p.str = append(p.str, '\t')
		case 'u':
			r, ok := hex4(p.buf, i)
			if !ok {
				p.pos = i
				return nil, p.errorf("invalid \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(p.buf, i+2); ok && i+1 < len(p.buf) && p.buf[i] == '\\' && p.buf[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					}
				}
			}
			p.str = utf8.AppendRune(p.str, r)
		default:
			p.pos = i - 2
			return nil, p.errorf("invalid escape \\%c", e)
		}
	}
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skip consumes one value of any type, checking its syntax.
func (p *parser) skip() error {
	p.ws()
	switch c := p.peek(); {
	case p.eof():
		return p.errorf("unexpected end of input")
	case c == '{' || c == '[':
		return p.container(func() error { return p.skip() })
	case c == '"' || c == '\'':
		_, err := p.string()
		return err
	case p.literal("true") || p.literal("false") || p.literal("null"):
		return nil
	default:
		if _, ok := p.number(); !ok {
			return p.errorf("unexpected %s", p.tokenName())
		}
		return nil
	}
}

// container walks an object or array at the cursor, calling value for each
// element (after the key of an object member has been consumed).
func (p *parser) container(value func() error) error {
	open := p.buf[p.pos]
	close := byte(']')
	if open == '{' {
		close = '}'
	}
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++
	p.ws()
	if p.peek() == close && !p.eof() {
		p.pos++
		p.depth--
		return nil
	}
	for {
		if open == '{' {
			if _, err := p.key(); err != nil {
				return err
			}
		}
		if err := value(); err != nil {
			return err
		}
		p.ws()
		switch c := p.peek(); {
		case p.eof():
			return p.errorf("unexpected end of input")
		case c == ',':
			p.pos++
		case c == close:
			p.pos++
			p.depth--
			return nil
		default:
			return p.errorf("expected ',' or %q, got %s", close, p.tokenName())
		}
	}
}

// members walks the object at the cursor (p.peek() == '{'), calling member
// with each member's name once the colon after it is consumed; member
// consumes the value. first is true for the first member. Unlike
// container, it hands over the names (the decoders of structs, maps and
// Jackson's rendering need them).
func (p *parser) members(member func(k []byte, first bool) error) error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++
	for first := true; ; first = false {
		p.ws()
		if p.peek() == '}' && !p.eof() {
			p.pos++
			p.depth--
			return nil
		}
		if !first {
			if err := p.expect(','); err != nil {
				return err
			}
		}
		k, err := p.key()
		if err != nil {
			return err
		}
		if err := member(k, first); err != nil {
			return err
		}
	}
}

// quoted reads the string at the cursor, where the column's type needs
// one (what names it in the error).
func (p *parser) quoted(what string) ([]byte, error) {
	if c := p.peek(); p.eof() || (c != '"' && c != '\'') {
		return nil, p.errorf("expected %s, got %s", what, p.tokenName())
	}
	return p.string()
}

// key reads an object member name and the colon after it.
func (p *parser) key() ([]byte, error) {
	p.ws()
	if c := p.peek(); p.eof() || (c != '"' && c != '\'') {
		return nil, p.errorf("expected a field name, got %s", p.tokenName())
	}
	k, err := p.string()
	if err != nil {
		return nil, err
	}
	return k, p.expect(':')
}

// SWAR constants: a byte of ones, a byte of high bits, in every lane.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// skipPlain returns the index of the first byte at or after i that ends or
// interrupts a fast-path string quoted by q: q, a backslash, a control
// character or a byte >= 0x80 (len(b) if none). Eight bytes per step:
// a lane is flagged exactly when it is below 0x20 or equal to q or '\\'
// (the "has a zero/less-than byte" tricks, which are exact on whether a
// word has such a byte), or has its high bit set.
func skipPlain(b []byte, i int, q byte) int {
	qs, bs := uint64(q)*lanes01, uint64('\\')*lanes01
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		xq, xb := x^qs, x^bs
		if ((x-0x20*lanes01)|(xq-lanes01)|(xb-lanes01))&^x&lanes80|x&lanes80 != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == q || c == '\\' || c < 0x20 || c >= 0x80 {
			return i
		}
	}
	return i
}
