package encode

import (
	"encoding/json"
	"fmt"
	"strings"
)

// avroNode is one type of a parsed Avro schema: just what encoding needs
// (the decoder's parser lives in wasm-decoders/avrodec, a separate module
// built for WebAssembly).
type avroNode struct {
	kind     string // null boolean int long float double bytes string record enum array map fixed union
	name     string // full name of a named type
	logical  string
	scale    int
	size     int // fixed
	fields   []avroField
	symbols  []string
	items    *avroNode // array items, map values
	branches []*avroNode
}

type avroField struct {
	name       string
	typ        *avroNode
	hasDefault bool
	def        any
}

// parseAvro parses an Avro schema definition (JSON).
func parseAvro(text string) (*avroNode, error) {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("the Avro schema is not JSON: %v", err)
	}
	p := avroParser{named: map[string]*avroNode{}}
	return p.parse(v, "")
}

type avroParser struct{ named map[string]*avroNode }

var primitives = map[string]bool{"null": true, "boolean": true, "int": true, "long": true, "float": true,
	"double": true, "bytes": true, "string": true}

func (p *avroParser) parse(v any, ns string) (*avroNode, error) {
	switch t := v.(type) {
	case string:
		if primitives[t] {
			return &avroNode{kind: t}, nil
		}
		full := t
		if !strings.Contains(t, ".") && ns != "" {
			full = ns + "." + t
		}
		if n, ok := p.named[full]; ok {
			return n, nil
		}
		if n, ok := p.named[t]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("unknown Avro type %q", t)
	case []any:
		u := &avroNode{kind: "union"}
		for _, b := range t {
			n, err := p.parse(b, ns)
			if err != nil {
				return nil, err
			}
			u.branches = append(u.branches, n)
		}
		return u, nil
	case map[string]any:
		return p.complex(t, ns)
	}
	return nil, fmt.Errorf("not an Avro type: %v", v)
}

func (p *avroParser) complex(m map[string]any, ns string) (*avroNode, error) {
	kind, _ := m["type"].(string)
	if kind == "" {
		// {"type": {...}} or {"type": [...]}: the inner type.
		return p.parse(m["type"], ns)
	}
	n := &avroNode{kind: kind}
	n.logical, _ = m["logicalType"].(string)
	if s, ok := m["scale"].(float64); ok {
		n.scale = int(s)
	}
	switch kind {
	case "record", "error", "enum", "fixed":
		n.kind = map[string]string{"error": "record"}[kind]
		if n.kind == "" {
			n.kind = kind
		}
		name, _ := m["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("Avro %s without a name", kind)
		}
		if nsv, ok := m["namespace"].(string); ok && !strings.Contains(name, ".") {
			ns = nsv
		}
		if strings.Contains(name, ".") {
			ns = name[:strings.LastIndex(name, ".")]
			n.name = name
		} else if ns != "" {
			n.name = ns + "." + name
		} else {
			n.name = name
		}
		p.named[n.name] = n
		switch n.kind {
		case "enum":
			for _, s := range m["symbols"].([]any) {
				n.symbols = append(n.symbols, fmt.Sprint(s))
			}
		case "fixed":
			s, _ := m["size"].(float64)
			n.size = int(s)
		case "record":
			fs, _ := m["fields"].([]any)
			for _, f := range fs {
				fm, _ := f.(map[string]any)
				t, err := p.parse(fm["type"], ns)
				if err != nil {
					return nil, err
				}
				fname, _ := fm["name"].(string)
				def, has := fm["default"]
				n.fields = append(n.fields, avroField{name: fname, typ: t, hasDefault: has, def: def})
			}
		}
		return n, nil
	case "array":
		it, err := p.parse(m["items"], ns)
		n.items = it
		return n, err
	case "map":
		it, err := p.parse(m["values"], ns)
		n.items = it
		return n, err
	}
	if primitives[kind] {
		return n, nil
	}
	return p.parse(kind, ns)
}

// String is the type as the schema writes it, for error messages.
func (n *avroNode) String() string {
	switch n.kind {
	case "union":
		parts := make([]string, len(n.branches))
		for i, b := range n.branches {
			parts[i] = b.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case "array":
		return "array<" + n.items.String() + ">"
	case "map":
		return "map<" + n.items.String() + ">"
	case "record", "enum", "fixed":
		return n.kind + " " + n.name
	}
	if n.logical != "" {
		return n.kind + " (" + n.logical + ")"
	}
	return n.kind
}

// jsonName is the union branch name Avro's JSON encoding wraps a value in.
func (n *avroNode) jsonName() string {
	if n.name != "" {
		return n.name
	}
	return n.kind
}
