// Package jsondec is the built-in JSON decoder: one JSON object per
// payload into a row of the target schema, with the semantics of Spark's
// from_json (PERMISSIVE mode, default options) for valid records. See
// docs/decoder-abi.md for the exact rules.
package jsondec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// maxDepth bounds nesting like Jackson's default StreamReadConstraints.
const maxDepth = 1000

type kind uint8

const (
	kNull kind = iota
	kBool
	kInt
	kUint
	kFloat
	kString
	kBinary
	kDecimal
	kDate
	kTimestamp
	kList
	kMap
	kStruct
)

// conv is the compiled conversion of one schema node.
type conv struct {
	kind   kind
	t      *arrowlite.DataType
	min    int64 // kInt range
	max    int64
	umax   uint64 // kUint range
	elem   *conv  // list item, map value
	fields []*conv
	names  map[string]int
	seen   []bool // struct: children set in the current slot (never nested)
	name   string
}

// Decoder decodes JSON payloads; it implements sdk.Decoder.
type Decoder struct {
	root    *conv
	tzOff   int64 // seconds east of UTC for strings without an offset
	p       parser
	scratch []byte
}

// New is the sdk.Factory of the JSON decoder. Options:
//
//	timezone: "UTC" (default) or a fixed offset like "+02:00"; applies to
//	          timestamp strings without an offset (Spark's session time zone).
func New(cfg sdk.Config) (sdk.Decoder, *arrowlite.Schema, error) {
	if cfg.Schema == nil || len(cfg.Schema.Fields) == 0 {
		return nil, nil, fmt.Errorf("json decoder: a target schema with at least one field is required")
	}
	d := &Decoder{}
	for k, v := range cfg.Options {
		switch k {
		case "timezone":
			off, ok := parseZone([]byte(v))
			if !ok {
				return nil, nil, fmt.Errorf("json decoder: option timezone=%q: only UTC and fixed offsets like +02:00 are supported", v)
			}
			d.tzOff = off
		default:
			return nil, nil, fmt.Errorf("json decoder: unknown option %q", k)
		}
	}
	root, err := compileStruct(cfg.Schema.Fields)
	if err != nil {
		return nil, nil, fmt.Errorf("json decoder: %w", err)
	}
	d.root = root
	return d, cfg.Schema, nil
}

func compileStruct(fields []arrowlite.Field) (*conv, error) {
	c := &conv{kind: kStruct, names: make(map[string]int, len(fields)), seen: make([]bool, len(fields))}
	for i, f := range fields {
		fc, err := compile(f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
		fc.name = f.Name
		c.fields = append(c.fields, fc)
		if _, dup := c.names[f.Name]; !dup {
			c.names[f.Name] = i
		}
	}
	return c, nil
}

func compile(t *arrowlite.DataType) (*conv, error) {
	c := &conv{t: t}
	switch t.ID {
	case arrowlite.Null:
		c.kind = kNull
	case arrowlite.Bool:
		c.kind = kBool
	case arrowlite.Int:
		if t.Signed {
			c.kind = kInt
			c.max = int64(1)<<(t.BitWidth-1) - 1
			c.min = -c.max - 1
		} else {
			c.kind = kUint
			c.umax = uint64(1)<<(t.BitWidth-1)<<1 - 1
		}
	case arrowlite.FloatingPoint:
		c.kind = kFloat
	case arrowlite.Utf8:
		c.kind = kString
	case arrowlite.Binary:
		c.kind = kBinary
	case arrowlite.Decimal:
		c.kind = kDecimal
	case arrowlite.Date:
		c.kind = kDate
	case arrowlite.Timestamp:
		c.kind = kTimestamp
	case arrowlite.List:
		c.kind = kList
		e, err := compile(t.Children[0].Type)
		if err != nil {
			return nil, err
		}
		c.elem = e
	case arrowlite.Map:
		kv := t.Children[0].Type.Children
		if kv[0].Type.ID != arrowlite.Utf8 {
			return nil, fmt.Errorf("map keys must be strings, not %s", kv[0].Type)
		}
		c.kind = kMap
		e, err := compile(kv[1].Type)
		if err != nil {
			return nil, err
		}
		c.elem = e
	case arrowlite.Struct:
		s, err := compileStruct(t.Children)
		if err != nil {
			return nil, err
		}
		s.t = t
		return s, nil
	default:
		return nil, fmt.Errorf("type %s is not supported", t)
	}
	return c, nil
}

// pathError is a record error with the path of the failing field, built
// on the way out of the recursion (only on failure).
type pathError struct {
	path []string
	msg  string
}

func (e *pathError) Error() string {
	if len(e.path) == 0 {
		return e.msg
	}
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		if b.Len() > 0 && !strings.HasPrefix(e.path[i], "[") {
			b.WriteByte('.')
		}
		b.WriteString(e.path[i])
	}
	return b.String() + ": " + e.msg
}

func within(err error, name string) error {
	if pe, ok := err.(*pathError); ok {
		pe.path = append(pe.path, name)
		return pe
	}
	return err
}

func withinIndex(err error, i int) error { return within(err, "["+strconv.Itoa(i)+"]") }

// Decode implements sdk.Decoder.
func (d *Decoder) Decode(payload []byte, cols []*arrowlite.Builder) error {
	p := &d.p
	p.reset(payload)
	p.ws()
	if p.eof() {
		return nil // empty payload: a null row, like from_json("")
	}
	if p.literal("null") {
		return p.end()
	}
	if p.peek() != '{' {
		return p.errorf("expected a JSON object, got %s", p.tokenName())
	}
	L := cols[0].Len()
	if err := d.object(d.root, cols, L); err != nil {
		return err
	}
	return p.end()
}
