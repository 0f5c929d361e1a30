package avrodec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// Avro's JSON encoding (the Avro specification, "JSON Encoding"; what
// Pub/Sub validates and delivers for a topic whose schema settings say
// JSON; like Pub/Sub, a union's value may also be given bare) is decoded by transcoding each datum to the binary encoding and
// decoding that: one decoding path, so both encodings give the same
// columns. Field defaults in a schema use the same JSON form (except that
// a union's default is its first branch's value, unwrapped), so reader
// defaults are transcoded once at init the same way.

// object is a JSON object with its keys in document order (map entries
// keep the order the writer gave them, as Spark's from_json keeps it).
type object struct {
	keys []string
	vals []any
}

func (o *object) get(k string) (any, bool) {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i], true
		}
	}
	return nil, false
}

// maxJSONDepth bounds the nesting of a JSON datum (the schema bounds
// well-formed data far below it; a hostile payload must not recurse deeply).
const maxJSONDepth = 128

// parseJSON reads one JSON value with objects as *object and numbers as
// json.Number; anything after it but white space is an error.
func parseJSON(payload []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	v, err := readJSON(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON-encoded avro datum: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON-encoded avro datum: data after the value")
	}
	return v, nil
}

func readJSON(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("nested too deeply")
	}
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.keys = append(o.keys, k.(string))
				o.vals = append(o.vals, v)
			}
			_, err = dec.Token()
			return o, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err = dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

// encodeJSON appends the binary encoding of v, a datum of n in Avro's JSON
// encoding, to out. With defaultForm, v is a field default: a union takes
// its first branch's value, unwrapped.
func encodeJSON(out []byte, n *node, v any, defaultForm bool) ([]byte, error) {
	bad := func() error {
		return fmt.Errorf("JSON value %s is not an avro %s", shortJSON(v), describe(n))
	}
	switch n.Kind {
	case aNull:
		if v != nil {
			return nil, bad()
		}
		return out, nil
	case aBool:
		b, ok := v.(bool)
		if !ok {
			return nil, bad()
		}
		if b {
			return append(out, 1), nil
		}
		return append(out, 0), nil
	case aInt, aLong:
		num, ok := v.(json.Number)
		if !ok {
			return nil, bad()
		}
		i, err := num.Int64()
		if err != nil || (n.Kind == aInt && (i < math.MinInt32 || i > math.MaxInt32)) {
			return nil, bad()
		}
		return appendZigzag(out, i), nil
	case aFloat, aDouble:
		f, ok := jsonFloat(v)
		if !ok {
			return nil, bad()
		}
		if n.Kind == aFloat {
			return binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(f))), nil
		}
		return binary.LittleEndian.AppendUint64(out, math.Float64bits(f)), nil
	case aString:
		s, ok := v.(string)
		if !ok {
			return nil, bad()
		}
		return append(appendZigzag(out, int64(len(s))), s...), nil
	case aBytes, aFixed:
		s, ok := v.(string)
		if !ok {
			return nil, bad()
		}
		b, ok := latin1(s)
		if !ok {
			return nil, fmt.Errorf("JSON string for avro %s has characters above U+00FF (bytes are encoded one per character)", describe(n))
		}
		if n.Kind == aFixed {
			if len(b) != n.Size {
				return nil, fmt.Errorf("avro %s needs %d bytes, the JSON string has %d", describe(n), n.Size, len(b))
			}
			return append(out, b...), nil
		}
		return append(appendZigzag(out, int64(len(b))), b...), nil
	case aEnum:
		s, ok := v.(string)
		if !ok {
			return nil, bad()
		}
		for i, sym := range n.Symbols {
			if sym == s {
				return appendZigzag(out, int64(i)), nil
			}
		}
		return nil, fmt.Errorf("%q is not a symbol of avro %s", s, describe(n))
	case aRecord:
		get, ok := fieldGetter(v)
		if !ok {
			return nil, bad()
		}
		var err error
		for _, f := range n.Fields {
			fv, present := get(f.Name)
			switch {
			case present:
				out, err = encodeJSON(out, f.Type, fv, false)
			case f.HasDefault:
				out, err = encodeJSON(out, f.Type, f.Default, true)
			default:
				err = errors.New("missing (and no default)")
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		return out, nil
	case aArray:
		list, ok := v.([]any)
		if !ok {
			return nil, bad()
		}
		if len(list) > 0 {
			out = appendZigzag(out, int64(len(list)))
			var err error
			for _, item := range list {
				if out, err = encodeJSON(out, n.Items, item, defaultForm); err != nil {
					return nil, err
				}
			}
		}
		return append(out, 0), nil
	case aMap:
		keys, vals, ok := entries(v)
		if !ok {
			return nil, bad()
		}
		if len(keys) > 0 {
			out = appendZigzag(out, int64(len(keys)))
			var err error
			for i, k := range keys {
				out = append(appendZigzag(out, int64(len(k))), k...)
				if out, err = encodeJSON(out, n.Items, vals[i], defaultForm); err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
			}
		}
		return append(out, 0), nil
	case aUnion:
		if defaultForm {
			return encodeJSON(appendZigzag(out, 0), n.Branches[0], v, true)
		}
		if v == nil {
			for i, b := range n.Branches {
				if b.Kind == aNull {
					return appendZigzag(out, int64(i)), nil
				}
			}
			return nil, bad()
		}
		if keys, vals, ok := entries(v); ok && len(keys) == 1 {
			for i, b := range n.Branches {
				if typeName(b) == keys[0] || (b.Name != "" && shortName(b.Name) == keys[0]) {
					return encodeJSON(appendZigzag(out, int64(i)), b, vals[0], false)
				}
			}
		}
		// A bare value, as Pub/Sub's validation also accepts: the first
		// branch it is a valid value of.
		for i, b := range n.Branches {
			if b.Kind == aNull {
				continue
			}
			if enc, err := encodeJSON(appendZigzag(out, int64(i)), b, v, false); err == nil {
				return enc, nil
			}
		}
		return nil, fmt.Errorf("JSON value %s matches no branch of avro union %s (as {\"<type name>\": value} or bare)",
			shortJSON(v), branchNames(n))
	}
	return nil, bad()
}

// typeName is how Avro's JSON encoding names a union branch: a primitive's
// name (logical types aside), a named type's full name, "array" or "map".
func typeName(n *node) string {
	if n.Name != "" {
		return n.Name
	}
	names := [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string",
		"record", "enum", "array", "map", "union", "fixed"}
	return names[n.Kind]
}

func shortName(full string) string { return full[strings.LastIndexByte(full, '.')+1:] }

func branchNames(u *node) string {
	var names []string
	for _, b := range u.Branches {
		names = append(names, typeName(b))
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func fieldGetter(v any) (func(string) (any, bool), bool) {
	switch o := v.(type) {
	case *object:
		return o.get, true
	case map[string]any: // a default in the schema
		return func(k string) (any, bool) { x, ok := o[k]; return x, ok }, true
	}
	return nil, false
}

func entries(v any) ([]string, []any, bool) {
	switch o := v.(type) {
	case *object:
		return o.keys, o.vals, true
	case map[string]any:
		var keys []string
		var vals []any
		for k, x := range o {
			keys = append(keys, k)
			vals = append(vals, x)
		}
		return keys, vals, true
	}
	return nil, nil, false
}

// jsonFloat reads a number, or the strings Java's Avro writes for
// non-finite values.
func jsonFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		switch x {
		case "NaN":
			return math.NaN(), true
		case "Infinity":
			return math.Inf(1), true
		case "-Infinity":
			return math.Inf(-1), true
		}
	}
	return 0, false
}

// latin1 maps each character (U+0000..U+00FF) to one byte, as Avro's JSON
// encoding writes bytes and fixed values.
func latin1(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff { // invalid UTF-8 reads as U+FFFD, also refused here
			return nil, false
		}
		out = append(out, byte(r))
	}
	return out, true
}

func appendZigzag(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

func shortJSON(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = "null"
	case *object:
		s = "{" + strings.Join(x.keys, ", ") + "}"
	case []any:
		s = fmt.Sprintf("[%d items]", len(x))
	case string:
		s = fmt.Sprintf("%q", x)
	default:
		s = fmt.Sprint(x)
	}
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
