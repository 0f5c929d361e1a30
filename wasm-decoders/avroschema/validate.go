package avroschema

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// ValidateJSON checks data is one instance of t in Avro's JSON encoding.
func (t *Node) ValidateJSON(data []byte) error {
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

func (t *Node) checkJSON(v any, path string) error {
	bad := func() error { return fmt.Errorf("%s: %s expected, got %s", path, t.describe(), jsonKind(v)) }
	switch t.Kind {
	case Null:
		if v != nil {
			return bad()
		}
	case Boolean:
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case Int, Long:
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		i, err := n.Int64()
		if err != nil || (t.Kind == Int && (i < math.MinInt32 || i > math.MaxInt32)) {
			return fmt.Errorf("%s: %s out of range for %s", path, n, t.Kind)
		}
	case Float, Double:
		if _, ok := v.(json.Number); !ok {
			return bad()
		}
	case String, Bytes, Enum, Fixed:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		if t.Kind == Enum && !contains(t.Symbols, s) {
			return fmt.Errorf("%s: %q is not a symbol of enum %s", path, s, t.Name)
		}
		if t.Kind == Fixed && utf8.RuneCountInString(s) != t.Size {
			return fmt.Errorf("%s: fixed %s holds %d bytes", path, t.Name, t.Size)
		}
	case Record:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for _, f := range t.Fields {
			fv, present := m[f.Name]
			if !present {
				if f.HasDefault {
					continue
				}
				return fmt.Errorf("%s: field %q of %s is missing", path, f.Name, t.Name)
			}
			if err := f.Type.checkJSON(fv, path+"."+f.Name); err != nil {
				return err
			}
		}
	case Array:
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		for i, x := range a {
			if err := t.Items.checkJSON(x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for k, x := range m {
			if err := t.Items.checkJSON(x, path+"."+k); err != nil {
				return err
			}
		}
	case Union:
		if v == nil {
			for _, b := range t.Branches {
				if b.Kind == Null {
					return nil
				}
			}
			return bad()
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for k, x := range m {
				for _, b := range t.Branches {
					if b.TypeName() == k || (b.Name != "" && b.Name[strings.LastIndexByte(b.Name, '.')+1:] == k) {
						return b.checkJSON(x, path+"."+k)
					}
				}
			}
		}
		// A bare value, which the service (and the decoder) accept: valid
		// when some branch takes it.
		for _, b := range t.Branches {
			if b.Kind != Null && b.checkJSON(v, path) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: %s matches no branch of the union %s (as {\"<type>\": value} or bare)", path, jsonKind(v), t)
	}
	return nil
}

func (t *Node) describe() string {
	if t.Name != "" {
		return t.Kind.String() + " " + t.Name
	}
	return t.Kind.String()
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

// ValidateBinary checks data is exactly one instance of t in Avro's binary
// encoding.
func (t *Node) ValidateBinary(data []byte) error {
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

func (t *Node) skip(r *avroReader) error {
	switch t.Kind {
	case Null:
	case Boolean:
		b, err := r.take(1)
		if err != nil {
			return err
		}
		if b[0] > 1 {
			return fmt.Errorf("boolean byte %d", b[0])
		}
	case Int, Long:
		v, err := r.long()
		if err != nil {
			return err
		}
		if t.Kind == Int && (v < math.MinInt32 || v > math.MaxInt32) {
			return fmt.Errorf("int out of range: %d", v)
		}
	case Float:
		_, err := r.take(4)
		return err
	case Double:
		_, err := r.take(8)
		return err
	case Bytes, String:
		n, err := r.long()
		if err != nil {
			return err
		}
		b, err := r.take(n)
		if err == nil && t.Kind == String && !utf8.Valid(b) {
			return fmt.Errorf("string is not UTF-8")
		}
		return err
	case Fixed:
		_, err := r.take(int64(t.Size))
		return err
	case Enum:
		i, err := r.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(t.Symbols)) {
			return fmt.Errorf("enum %s index %d out of range", t.Name, i)
		}
	case Record:
		for _, f := range t.Fields {
			if err := f.Type.skip(r); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	case Array, Map:
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
				if t.Kind == Map {
					if err := (&Node{Kind: String}).skip(r); err != nil {
						return err
					}
				}
				if err := t.Items.skip(r); err != nil {
					return err
				}
			}
		}
	case Union:
		i, err := r.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(t.Branches)) {
			return fmt.Errorf("union branch %d out of range", i)
		}
		return t.Branches[i].skip(r)
	}
	return nil
}
