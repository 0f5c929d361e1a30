// Package avrodec is the built-in Avro decoder: one Avro binary-encoded
// datum (no container file header, no schema-registry prefix) per payload,
// written with the schema given in the "avro_schema" option, decoded like
// Spark's from_avro. When the host gives no target schema, the decoder
// derives it as Spark's SchemaConverters.toSqlType does.
package avrodec

import (
	"encoding/json"
	"fmt"
	"strings"
)

type akind uint8

const (
	aNull akind = iota
	aBool
	aInt
	aLong
	aFloat
	aDouble
	aBytes
	aString
	aRecord
	aEnum
	aArray
	aMap
	aUnion
	aFixed
)

var primitives = map[string]akind{
	"null": aNull, "boolean": aBool, "int": aInt, "long": aLong,
	"float": aFloat, "double": aDouble, "bytes": aBytes, "string": aString,
}

// node is a parsed Avro schema.
type node struct {
	kind       akind
	logical    string // kept only when valid for the type
	precision  int
	scale      int
	size       int // fixed
	name       string
	fields     []afield
	symbols    []string
	enumDef    string   // enum: the symbol for writer symbols the reader lacks
	aliases    []string // named types: other names this type answers to
	items      *node    // array items, map values
	branches   []*node
	minSize    int // fewest bytes one datum can take
	inProgress bool
}

type afield struct {
	name    string
	typ     *node
	aliases []string
	def     any // the field's default as JSON (json.Number for numbers)
	hasDef  bool
}

// parseSchema parses Avro schema JSON. Recursive types are rejected, as
// Spark does.
func parseSchema(text string) (*node, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("avro_schema is not valid JSON: %v", err)
	}
	p := &schemaParser{named: map[string]*node{}}
	return p.parse(v, "", 0)
}

type schemaParser struct{ named map[string]*node }

func (p *schemaParser) parse(v any, ns string, depth int) (*node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("avro schema nested too deeply")
	}
	switch s := v.(type) {
	case string:
		if k, ok := primitives[s]; ok {
			return withMin(&node{kind: k}), nil
		}
		return p.lookup(s, ns)
	case []any:
		u := &node{kind: aUnion}
		for _, b := range s {
			n, err := p.parse(b, ns, depth+1)
			if err != nil {
				return nil, err
			}
			if n.kind == aUnion {
				return nil, fmt.Errorf("unions may not contain unions")
			}
			u.branches = append(u.branches, n)
		}
		if len(u.branches) == 0 {
			return nil, fmt.Errorf("empty union")
		}
		return withMin(u), nil
	case map[string]any:
		return p.complex(s, ns, depth)
	}
	return nil, fmt.Errorf("invalid avro schema element %v", v)
}

func (p *schemaParser) lookup(name, ns string) (*node, error) {
	candidates := []string{name}
	if !strings.Contains(name, ".") && ns != "" {
		candidates = []string{ns + "." + name, name}
	}
	for _, c := range candidates {
		if n, ok := p.named[c]; ok {
			if n.inProgress {
				return nil, fmt.Errorf("recursive reference to %q is not supported", c)
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unknown avro type %q", name)
}

func (p *schemaParser) complex(m map[string]any, ns string, depth int) (*node, error) {
	typ, ok := m["type"]
	if !ok {
		return nil, fmt.Errorf("avro schema object without \"type\"")
	}
	ts, isStr := typ.(string)
	if !isStr {
		// {"type": {...}} or {"type": [...]}: a wrapped schema.
		return p.parse(typ, ns, depth+1)
	}
	switch ts {
	case "record", "error", "enum", "fixed":
		return p.namedType(ts, m, ns, depth)
	case "array":
		items, err := p.parse(m["items"], ns, depth+1)
		if err != nil {
			return nil, fmt.Errorf("array items: %w", err)
		}
		return withMin(&node{kind: aArray, items: items}), nil
	case "map":
		values, err := p.parse(m["values"], ns, depth+1)
		if err != nil {
			return nil, fmt.Errorf("map values: %w", err)
		}
		return withMin(&node{kind: aMap, items: values}), nil
	}
	n, err := p.parse(ts, ns, depth+1)
	if err != nil {
		return nil, err
	}
	if lt, ok := m["logicalType"].(string); ok && n.kind < aRecord {
		c := *n
		c.logical = lt
		if lt == "decimal" {
			c.precision, c.scale = intAttr(m, "precision", 0), intAttr(m, "scale", 0)
		}
		if validLogical(&c) {
			return &c, nil
		}
	}
	return n, nil
}

func (p *schemaParser) namedType(kind string, m map[string]any, ns string, depth int) (*node, error) {
	name, _ := m["name"].(string)
	if name == "" {
		return nil, fmt.Errorf("%s without a name", kind)
	}
	if space, ok := m["namespace"].(string); ok && !strings.Contains(name, ".") {
		ns = space
	}
	full := name
	if !strings.Contains(name, ".") && ns != "" {
		full = ns + "." + name
	}
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		ns = full[:i]
	}
	if _, dup := p.named[full]; dup {
		return nil, fmt.Errorf("avro type %q defined twice", full)
	}
	n := &node{name: full, aliases: stringList(m["aliases"])}
	switch kind {
	case "enum":
		n.kind = aEnum
		syms, _ := m["symbols"].([]any)
		for _, s := range syms {
			str, ok := s.(string)
			if !ok {
				return nil, fmt.Errorf("enum %s: symbols must be strings", full)
			}
			n.symbols = append(n.symbols, str)
		}
		if len(n.symbols) == 0 {
			return nil, fmt.Errorf("enum %s has no symbols", full)
		}
		n.enumDef, _ = m["default"].(string)
	case "fixed":
		n.kind = aFixed
		n.size = intAttr(m, "size", -1)
		if n.size < 0 {
			return nil, fmt.Errorf("fixed %s needs a size", full)
		}
		if lt, ok := m["logicalType"].(string); ok {
			n.logical = lt
			if lt == "decimal" {
				n.precision, n.scale = intAttr(m, "precision", 0), intAttr(m, "scale", 0)
			}
			if !validLogical(n) {
				n.logical = ""
			}
		}
	default:
		n.kind = aRecord
		n.inProgress = true
		p.named[full] = n
		fields, ok := m["fields"].([]any)
		if !ok {
			return nil, fmt.Errorf("record %s needs fields", full)
		}
		for _, f := range fields {
			fm, ok := f.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("record %s: invalid field", full)
			}
			fname, _ := fm["name"].(string)
			ft, err := p.parse(fm["type"], ns, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", full, fname, err)
			}
			af := afield{name: fname, typ: ft, aliases: stringList(fm["aliases"])}
			af.def, af.hasDef = fm["default"]
			n.fields = append(n.fields, af)
		}
		n.inProgress = false
	}
	p.named[full] = n
	return withMin(n), nil
}

// stringList reads a JSON array of strings (aliases), ignoring other values.
func stringList(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func intAttr(m map[string]any, key string, def int) int {
	if v, ok := m[key].(json.Number); ok {
		if i, err := v.Int64(); err == nil && i >= 0 && i < 1<<31 {
			return int(i)
		}
	}
	return def
}

// validLogical reports whether a logical type applies; invalid ones are
// ignored, as the Avro specification requires.
func validLogical(n *node) bool {
	switch n.logical {
	case "date", "time-millis":
		return n.kind == aInt
	case "time-micros", "timestamp-millis", "timestamp-micros", "timestamp-nanos",
		"local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos":
		return n.kind == aLong
	case "decimal":
		if n.kind != aBytes && n.kind != aFixed {
			return false
		}
		if n.precision < 1 || n.scale > n.precision {
			return false
		}
		return n.kind == aBytes || n.precision <= maxDigits(n.size)
	case "uuid":
		return n.kind == aString || (n.kind == aFixed && n.size == 16)
	}
	return false
}

// maxDigits is the largest precision a fixed of size bytes can hold.
func maxDigits(size int) int {
	if size <= 0 {
		return 0
	}
	if size > 16 {
		return 38 + (size-16)*2 // more than decimal128 needs anyway
	}
	// floor(log10(2^(8*size-1) - 1))
	return int(float64(8*size-1) * 0.30102999566398) // log10(2)
}

func withMin(n *node) *node {
	switch n.kind {
	case aNull:
		n.minSize = 0
	case aFloat:
		n.minSize = 4
	case aDouble:
		n.minSize = 8
	case aFixed:
		n.minSize = n.size
	case aRecord:
		n.minSize = 0
		for _, f := range n.fields {
			n.minSize += f.typ.minSize
		}
	default:
		n.minSize = 1
	}
	return n
}
