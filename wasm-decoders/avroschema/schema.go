// Package avroschema is the one Avro schema model of the project: the
// parser (named types, namespaces, aliases, logical types) and the checks
// of a datum against a schema in Avro's JSON and binary encodings. The
// built-in decoder (avrodec, in WebAssembly and natively), the sink's
// encoder and the embedded emulator all read schemas through it, so that
// they agree on what a schema and a valid message are. It lives in the
// decoders' module because the guest build cannot import the main
// module's internal packages, while the main module imports this one.
package avroschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Kind is an Avro type.
type Kind uint8

const (
	Null Kind = iota
	Boolean
	Int
	Long
	Float
	Double
	Bytes
	String
	Record
	Enum
	Array
	Map
	Union
	Fixed
)

var kindNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string",
	"record", "enum", "array", "map", "union", "fixed"}

// String is the type's name as a schema writes it.
func (k Kind) String() string { return kindNames[k] }

var primitives = map[string]Kind{
	"null": Null, "boolean": Boolean, "int": Int, "long": Long,
	"float": Float, "double": Double, "bytes": Bytes, "string": String,
}

// Node is one type of a parsed Avro schema.
type Node struct {
	Kind        Kind
	Logical     string // kept only when valid for the type
	Precision   int
	Scale       int
	Size        int    // fixed
	Name        string // full name of a named type
	Fields      []Field
	Symbols     []string
	EnumDefault string   // enum: the symbol for writer symbols the reader lacks
	Aliases     []string // named types: other names this type answers to
	Items       *Node    // array items, map values
	Branches    []*Node
	MinSize     int // fewest bytes one datum can take
	inProgress  bool
}

// TypeName is the type's full name, or its kind for an unnamed type: what
// Avro's JSON encoding wraps a union's value in.
func (n *Node) TypeName() string {
	if n.Name != "" {
		return n.Name
	}
	return n.Kind.String()
}

// String is the type as the schema writes it, for error messages.
func (n *Node) String() string {
	switch n.Kind {
	case Union:
		parts := make([]string, len(n.Branches))
		for i, b := range n.Branches {
			parts[i] = b.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case Array:
		return "array<" + n.Items.String() + ">"
	case Map:
		return "map<" + n.Items.String() + ">"
	case Record, Enum, Fixed:
		return n.Kind.String() + " " + n.Name
	}
	if n.Logical != "" {
		return n.Kind.String() + " (" + n.Logical + ")"
	}
	return n.Kind.String()
}

// Field is one field of a record.
type Field struct {
	Name       string
	Type       *Node
	Aliases    []string
	Default    any // the field's default as JSON (json.Number for numbers)
	HasDefault bool
}

// ErrNotJSON is the error of a schema text that is not JSON.
var ErrNotJSON = errors.New("the Avro schema is not JSON")

// Parse parses Avro schema JSON. Recursive types are rejected: Spark's
// types cannot hold them, so the decoder and the encoder refuse them.
func Parse(text string) (*Node, error) { return parse(text, false) }

// ParseRecursive parses Avro schema JSON, recursive types included (the
// Pub/Sub service accepts them).
func ParseRecursive(text string) (*Node, error) { return parse(text, true) }

func parse(text string, recursive bool) (*Node, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	p := &schemaParser{named: map[string]*Node{}, recursive: recursive}
	return p.parse(v, "", 0)
}

type schemaParser struct {
	named     map[string]*Node
	recursive bool
}

func (p *schemaParser) parse(v any, ns string, depth int) (*Node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("avro schema nested too deeply")
	}
	switch s := v.(type) {
	case string:
		if k, ok := primitives[s]; ok {
			return withMin(&Node{Kind: k}), nil
		}
		return p.lookup(s, ns)
	case []any:
		u := &Node{Kind: Union}
		for _, b := range s {
			n, err := p.parse(b, ns, depth+1)
			if err != nil {
				return nil, err
			}
			if n.Kind == Union {
				return nil, fmt.Errorf("unions may not contain unions")
			}
			u.Branches = append(u.Branches, n)
		}
		if len(u.Branches) == 0 {
			return nil, fmt.Errorf("empty union")
		}
		return withMin(u), nil
	case map[string]any:
		return p.complex(s, ns, depth)
	}
	return nil, fmt.Errorf("invalid avro schema element %v", v)
}

func (p *schemaParser) lookup(name, ns string) (*Node, error) {
	candidates := []string{name}
	if !strings.Contains(name, ".") && ns != "" {
		candidates = []string{ns + "." + name, name}
	}
	for _, c := range candidates {
		if n, ok := p.named[c]; ok {
			if n.inProgress && !p.recursive {
				return nil, fmt.Errorf("recursive reference to %q is not supported", c)
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unknown avro type %q", name)
}

func (p *schemaParser) complex(m map[string]any, ns string, depth int) (*Node, error) {
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
			return nil, fmt.Errorf("array Items:  %w", err)
		}
		return withMin(&Node{Kind: Array, Items: items}), nil
	case "map":
		values, err := p.parse(m["values"], ns, depth+1)
		if err != nil {
			return nil, fmt.Errorf("map values: %w", err)
		}
		return withMin(&Node{Kind: Map, Items: values}), nil
	}
	n, err := p.parse(ts, ns, depth+1)
	if err != nil {
		return nil, err
	}
	if lt, ok := m["logicalType"].(string); ok && n.Kind < Record {
		c := *n
		c.Logical = lt
		if lt == "decimal" {
			c.Precision, c.Scale = intAttr(m, "precision", 0), intAttr(m, "scale", 0)
		}
		if validLogical(&c) {
			return &c, nil
		}
	}
	return n, nil
}

func (p *schemaParser) namedType(kind string, m map[string]any, ns string, depth int) (*Node, error) {
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
	n := &Node{Name: full, Aliases: stringList(m["aliases"])}
	switch kind {
	case "enum":
		n.Kind = Enum
		syms, _ := m["symbols"].([]any)
		for _, s := range syms {
			str, ok := s.(string)
			if !ok {
				return nil, fmt.Errorf("enum %s: symbols must be strings", full)
			}
			n.Symbols = append(n.Symbols, str)
		}
		if len(n.Symbols) == 0 {
			return nil, fmt.Errorf("enum %s has no symbols", full)
		}
		n.EnumDefault, _ = m["default"].(string)
	case "fixed":
		n.Kind = Fixed
		n.Size = intAttr(m, "size", -1)
		if n.Size < 0 {
			return nil, fmt.Errorf("fixed %s needs a size", full)
		}
		if lt, ok := m["logicalType"].(string); ok {
			n.Logical = lt
			if lt == "decimal" {
				n.Precision, n.Scale = intAttr(m, "precision", 0), intAttr(m, "scale", 0)
			}
			if !validLogical(n) {
				n.Logical = ""
			}
		}
	default:
		n.Kind = Record
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
			af := Field{Name: fname, Type: ft, Aliases: stringList(fm["aliases"])}
			af.Default, af.HasDefault = fm["default"]
			n.Fields = append(n.Fields, af)
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
func validLogical(n *Node) bool {
	switch n.Logical {
	case "date", "time-millis":
		return n.Kind == Int
	case "time-micros", "timestamp-millis", "timestamp-micros", "timestamp-nanos",
		"local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos":
		return n.Kind == Long
	case "decimal":
		if n.Kind != Bytes && n.Kind != Fixed {
			return false
		}
		if n.Precision < 1 || n.Scale > n.Precision {
			return false
		}
		return n.Kind == Bytes || n.Precision <= maxDigits(n.Size)
	case "uuid":
		return n.Kind == String || (n.Kind == Fixed && n.Size == 16)
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

func withMin(n *Node) *Node {
	switch n.Kind {
	case Null:
		n.MinSize = 0
	case Float:
		n.MinSize = 4
	case Double:
		n.MinSize = 8
	case Fixed:
		n.MinSize = n.Size
	case Record:
		n.MinSize = 0
		for _, f := range n.Fields {
			n.MinSize += f.Type.MinSize
		}
	default:
		n.MinSize = 1
	}
	return n
}
