package emulator

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// avroType is a parsed Avro schema, enough to check that a message is an
// instance of it in Avro's JSON or binary encoding (what the service does
// for topics with an Avro schema). Logical types are their underlying types.
type avroType struct {
	kind     string // null boolean int long float double bytes string record enum array map union fixed
	name     string // full name of a named type
	fields   []avroField
	symbols  []string
	items    *avroType // array items, map values
	branches []*avroType
	size     int
}

type avroField struct {
	name       string
	typ        *avroType
	hasDefault bool
}

// parseAvro parses an Avro schema definition.
func parseAvro(def string) (*avroType, error) {
	var v any
	d := json.NewDecoder(strings.NewReader(def))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	p := avroParser{named: map[string]*avroType{}}
	return p.parse(v, "")
}

type avroParser struct {
	named map[string]*avroType
}

var avroPrimitives = map[string]bool{"null": true, "boolean": true, "int": true, "long": true, "float": true,
	"double": true, "bytes": true, "string": true}

func (p *avroParser) parse(v any, ns string) (*avroType, error) {
	switch x := v.(type) {
	case string:
		if avroPrimitives[x] {
			return &avroType{kind: x}, nil
		}
		if t := p.lookup(x, ns); t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("unknown type %q", x)
	case []any:
		u := &avroType{kind: "union"}
		for _, b := range x {
			t, err := p.parse(b, ns)
			if err != nil {
				return nil, err
			}
			u.branches = append(u.branches, t)
		}
		return u, nil
	case map[string]any:
		kind, _ := x["type"].(string)
		switch kind {
		case "record", "error", "enum", "fixed":
			name, _ := x["name"].(string)
			if name == "" {
				return nil, fmt.Errorf("a %s needs a name", kind)
			}
			if n, ok := x["namespace"].(string); ok && !strings.Contains(name, ".") {
				ns = n
			}
			full := name
			if !strings.Contains(name, ".") && ns != "" {
				full = ns + "." + name
			}
			if i := strings.LastIndexByte(full, '.'); i >= 0 {
				ns = full[:i]
			}
			t := &avroType{kind: kind, name: full}
			if kind == "error" {
				t.kind = "record"
			}
			p.named[full] = t
			switch t.kind {
			case "record":
				fields, _ := x["fields"].([]any)
				for _, f := range fields {
					fm, _ := f.(map[string]any)
					fname, _ := fm["name"].(string)
					if fname == "" {
						return nil, fmt.Errorf("record %s: a field without a name", full)
					}
					ft, err := p.parse(fm["type"], ns)
					if err != nil {
						return nil, fmt.Errorf("record %s field %s: %v", full, fname, err)
					}
					_, hasDefault := fm["default"]
					t.fields = append(t.fields, avroField{fname, ft, hasDefault})
				}
			case "enum":
				syms, _ := x["symbols"].([]any)
				for _, s := range syms {
					str, _ := s.(string)
					t.symbols = append(t.symbols, str)
				}
			case "fixed":
				n, _ := x["size"].(json.Number)
				size, err := n.Int64()
				if err != nil || size < 0 {
					return nil, fmt.Errorf("fixed %s: bad size", full)
				}
				t.size = int(size)
			}
			return t, nil
		case "array", "map":
			key := "items"
			if kind == "map" {
				key = "values"
			}
			it, err := p.parse(x[key], ns)
			if err != nil {
				return nil, err
			}
			return &avroType{kind: kind, items: it}, nil
		default:
			return p.parse(x["type"], ns) // a primitive, maybe with a logicalType
		}
	}
	return nil, fmt.Errorf("unexpected %T in schema", v)
}

func (p *avroParser) lookup(name, ns string) *avroType {
	if t := p.named[name]; t != nil {
		return t
	}
	return p.named[ns+"."+name]
}

// validJSON checks data is one JSON-encoded instance of t.
func (t *avroType) validJSON(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if d.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return t.checkJSON(v, "$")
}

func (t *avroType) checkJSON(v any, path string) error {
	bad := func() error { return fmt.Errorf("%s: %s expected, got %s", path, t.describe(), jsonKind(v)) }
	switch t.kind {
	case "null":
		if v != nil {
			return bad()
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case "int", "long":
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		i, err := n.Int64()
		if err != nil || (t.kind == "int" && (i < math.MinInt32 || i > math.MaxInt32)) {
			return fmt.Errorf("%s: %s out of range for %s", path, n, t.kind)
		}
	case "float", "double":
		if _, ok := v.(json.Number); !ok {
			return bad()
		}
	case "string", "bytes", "enum", "fixed":
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		if t.kind == "enum" && !contains(t.symbols, s) {
			return fmt.Errorf("%s: %q is not a symbol of enum %s", path, s, t.name)
		}
		if t.kind == "fixed" && utf8.RuneCountInString(s) != t.size {
			return fmt.Errorf("%s: fixed %s holds %d bytes", path, t.name, t.size)
		}
	case "record":
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for _, f := range t.fields {
			fv, present := m[f.name]
			if !present {
				if f.hasDefault {
					continue
				}
				return fmt.Errorf("%s: field %q of %s is missing", path, f.name, t.name)
			}
			if err := f.typ.checkJSON(fv, path+"."+f.name); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		for i, x := range a {
			if err := t.items.checkJSON(x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for k, x := range m {
			if err := t.items.checkJSON(x, path+"."+k); err != nil {
				return err
			}
		}
	case "union":
		if v == nil {
			for _, b := range t.branches {
				if b.kind == "null" {
					return nil
				}
			}
			return bad()
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return fmt.Errorf("%s: a union value is null or {\"<type>\": value}, got %s", path, jsonKind(v))
		}
		for k, x := range m {
			for _, b := range t.branches {
				if b.typeName() == k || (b.name != "" && b.name[strings.LastIndexByte(b.name, '.')+1:] == k) {
					return b.checkJSON(x, path+"."+k)
				}
			}
			return fmt.Errorf("%s: %q is not a branch of the union", path, k)
		}
	}
	return nil
}

func (t *avroType) typeName() string {
	if t.name != "" {
		return t.name
	}
	return t.kind
}

func (t *avroType) describe() string {
	if t.name != "" {
		return t.kind + " " + t.name
	}
	return t.kind
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// validBinary checks data is exactly one binary-encoded instance of t.
func (t *avroType) validBinary(data []byte) error {
	r := &avroReader{b: data}
	if err := t.skip(r); err != nil {
		return err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%d bytes left after the value", len(r.b))
	}
	return nil
}

type avroReader struct{ b []byte }

var errShort = fmt.Errorf("data ends inside a value")

func (r *avroReader) long() (int64, error) {
	u, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, errShort
	}
	r.b = r.b[n:]
	return int64(u>>1) ^ -int64(u&1), nil
}

func (r *avroReader) take(n int64) ([]byte, error) {
	if n < 0 || n > int64(len(r.b)) {
		return nil, errShort
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out, nil
}

func (t *avroType) skip(r *avroReader) error {
	switch t.kind {
	case "null":
	case "boolean":
		b, err := r.take(1)
		if err != nil {
			return err
		}
		if b[0] > 1 {
			return fmt.Errorf("boolean byte %d", b[0])
		}
	case "int", "long":
		v, err := r.long()
		if err != nil {
			return err
		}
		if t.kind == "int" && (v < math.MinInt32 || v > math.MaxInt32) {
			return fmt.Errorf("int out of range: %d", v)
		}
	case "float":
		_, err := r.take(4)
		return err
	case "double":
		_, err := r.take(8)
		return err
	case "bytes", "string":
		n, err := r.long()
		if err != nil {
			return err
		}
		b, err := r.take(n)
		if err == nil && t.kind == "string" && !utf8.Valid(b) {
			return fmt.Errorf("string is not UTF-8")
		}
		return err
	case "fixed":
		_, err := r.take(int64(t.size))
		return err
	case "enum":
		i, err := r.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(t.symbols)) {
			return fmt.Errorf("enum %s index %d out of range", t.name, i)
		}
	case "record":
		for _, f := range t.fields {
			if err := f.typ.skip(r); err != nil {
				return fmt.Errorf("field %s: %w", f.name, err)
			}
		}
	case "array", "map":
		for {
			n, err := r.long()
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if n < 0 {
				n = -n
				if _, err := r.long(); err != nil { // the block's size in bytes
					return err
				}
			}
			for i := int64(0); i < n; i++ {
				if t.kind == "map" {
					if err := (&avroType{kind: "string"}).skip(r); err != nil {
						return err
					}
				}
				if err := t.items.skip(r); err != nil {
					return err
				}
			}
		}
	case "union":
		i, err := r.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(t.branches)) {
			return fmt.Errorf("union branch %d out of range", i)
		}
		return t.branches[i].skip(r)
	}
	return nil
}
