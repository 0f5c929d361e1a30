package emulator

import (
	"fmt"
	"strconv"
	"strings"
)

// filterExpr is a parsed subscription filter. The grammar is the service's
// (https://cloud.google.com/pubsub/docs/subscription-message-filter):
//
//	expr      = term { "OR" term }
//	term      = factor { "AND" factor }
//	factor    = ("NOT" | "-") factor | "(" expr ")" | predicate
//	predicate = "attributes:" key
//	          | "attributes." key ("=" | "!=") string
//	          | "hasPrefix(attributes." key "," string ")"
//
// No maintained Go parser for it is importable (pstest's is internal to
// the Go client), so this is a small recursive-descent one (RATIONALE.md).
type filterExpr interface {
	match(attrs map[string]string) bool
}

type (
	orExpr  []filterExpr
	andExpr []filterExpr
	notExpr struct{ x filterExpr }
	hasExpr struct{ key string }
	eqExpr  struct {
		key, val string
		neg      bool
	}
	prefixExpr struct{ key, prefix string }
)

func (o orExpr) match(a map[string]string) bool {
	for _, x := range o {
		if x.match(a) {
			return true
		}
	}
	return false
}

func (o andExpr) match(a map[string]string) bool {
	for _, x := range o {
		if !x.match(a) {
			return false
		}
	}
	return true
}

func (n notExpr) match(a map[string]string) bool { return !n.x.match(a) }

func (h hasExpr) match(a map[string]string) bool { _, ok := a[h.key]; return ok }

func (e eqExpr) match(a map[string]string) bool {
	v, ok := a[e.key]
	if e.neg {
		return !ok || v != e.val
	}
	return ok && v == e.val
}

func (p prefixExpr) match(a map[string]string) bool {
	v, ok := a[p.key]
	return ok && strings.HasPrefix(v, p.prefix)
}

// maxFilterBytes is the service's limit on a filter's length.
const maxFilterBytes = 256

func parseFilter(src string) (filterExpr, error) {
	if len(src) > maxFilterBytes {
		return nil, fmt.Errorf("%d bytes, at most %d", len(src), maxFilterBytes)
	}
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q at the end", p.toks[p.i].text)
	}
	return x, nil
}

type tokKind uint8

const (
	tWord tokKind = iota
	tString
	tPunct
)

type token struct {
	kind tokKind
	text string
}

func tokenize(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated string starting at %d", i)
			}
			lit := src[i : j+1]
			if c == '\'' {
				lit = `"` + strings.ReplaceAll(lit[1:len(lit)-1], `"`, `\"`) + `"`
			}
			s, err := strconv.Unquote(lit)
			if err != nil {
				return nil, fmt.Errorf("bad string %s: %v", src[i:j+1], err)
			}
			toks = append(toks, token{tString, s})
			i = j + 1
		case c == '!' && i+1 < len(src) && src[i+1] == '=':
			toks = append(toks, token{tPunct, "!="})
			i += 2
		case strings.IndexByte("()=:.,-", c) >= 0:
			toks = append(toks, token{tPunct, string(c)})
			i++
		case isLetter(c) || c == '_' || (c >= '0' && c <= '9'):
			j := i
			for j < len(src) && (isLetter(src[j]) || src[j] == '_' || (src[j] >= '0' && src[j] <= '9') || (src[j] == '-' && j > i)) {
				j++
			}
			toks = append(toks, token{tWord, src[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q at %d", c, i)
		}
	}
	return toks, nil
}

type filterParser struct {
	toks []token
	i    int
}

func (p *filterParser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{tPunct, ""}
}

func (p *filterParser) accept(kind tokKind, text string) bool {
	if t := p.peek(); t.kind == kind && t.text == text {
		p.i++
		return true
	}
	return false
}

func (p *filterParser) expect(kind tokKind, text string) error {
	if !p.accept(kind, text) {
		return fmt.Errorf("expected %q, found %q", text, p.peek().text)
	}
	return nil
}

func (p *filterParser) expr() (filterExpr, error) {
	x, err := p.term()
	if err != nil {
		return nil, err
	}
	or := orExpr{x}
	for p.accept(tWord, "OR") {
		y, err := p.term()
		if err != nil {
			return nil, err
		}
		or = append(or, y)
	}
	if len(or) == 1 {
		return x, nil
	}
	return or, nil
}

func (p *filterParser) term() (filterExpr, error) {
	x, err := p.factor()
	if err != nil {
		return nil, err
	}
	and := andExpr{x}
	for p.accept(tWord, "AND") {
		y, err := p.factor()
		if err != nil {
			return nil, err
		}
		and = append(and, y)
	}
	if len(and) == 1 {
		return x, nil
	}
	return and, nil
}

func (p *filterParser) factor() (filterExpr, error) {
	if p.accept(tWord, "NOT") || p.accept(tPunct, "-") {
		x, err := p.factor()
		if err != nil {
			return nil, err
		}
		return notExpr{x}, nil
	}
	if p.accept(tPunct, "(") {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		return x, p.expect(tPunct, ")")
	}
	if p.accept(tWord, "hasPrefix") {
		if err := p.expect(tPunct, "("); err != nil {
			return nil, err
		}
		if err := p.expect(tWord, "attributes"); err != nil {
			return nil, err
		}
		if err := p.expect(tPunct, "."); err != nil {
			return nil, err
		}
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tPunct, ","); err != nil {
			return nil, err
		}
		val, err := p.str()
		if err != nil {
			return nil, err
		}
		return prefixExpr{key, val}, p.expect(tPunct, ")")
	}
	if err := p.expect(tWord, "attributes"); err != nil {
		return nil, err
	}
	if p.accept(tPunct, ":") {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		return hasExpr{key}, nil
	}
	if err := p.expect(tPunct, "."); err != nil {
		return nil, err
	}
	key, err := p.key()
	if err != nil {
		return nil, err
	}
	neg := false
	switch {
	case p.accept(tPunct, "="):
	case p.accept(tPunct, "!="):
		neg = true
	default:
		return nil, fmt.Errorf("expected = or != after attributes.%s, found %q", key, p.peek().text)
	}
	val, err := p.str()
	if err != nil {
		return nil, err
	}
	return eqExpr{key, val, neg}, nil
}

func (p *filterParser) key() (string, error) {
	t := p.peek()
	if t.kind == tWord || t.kind == tString {
		p.i++
		return t.text, nil
	}
	return "", fmt.Errorf("expected an attribute key, found %q", t.text)
}

func (p *filterParser) str() (string, error) {
	t := p.peek()
	if t.kind == tString {
		p.i++
		return t.text, nil
	}
	return "", fmt.Errorf("expected a quoted string, found %q", t.text)
}
