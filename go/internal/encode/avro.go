// Package encode turns the columns of an Arrow batch into the payloads of
// a topic with a Pub/Sub schema (the sink's schemaFrom=topic): Avro
// (avro.go) or protocol buffer (protobuf.go), binary or JSON, one message
// per row (encoder.go).
package encode

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/avroschema"
)

// avroEnc encodes one Arrow array's values as one Avro type. It is planned
// once per batch schema (planAvro), so a type mismatch is found before any
// row is encoded and names the column.
type avroEnc struct {
	node   *avroschema.Node
	path   string // column path, for errors
	op     string // what the Arrow value is read as
	branch int    // union: the branch a non-null value takes; -1 none
	null   int    // union: the null branch; -1 none
	inner  *avroEnc
	fields []*avroEnc // record: one per schema field (nil: written from its default)
	cols   []int      // record: the struct child of each field (-1: default)
	keys   *avroEnc   // map keys (strings)
	unit   int64      // timestamps: Arrow units per Avro unit (or, negative, the divisor)
	symIdx map[string]int
}

type mismatchError struct{ msg string }

func (e *mismatchError) Error() string { return e.msg }

func mismatch(path string, t arrow.DataType, n *avroschema.Node, why string) error {
	msg := fmt.Sprintf("column %s has type %s, which does not fit the schema's %s", path, t, n)
	if why != "" {
		msg += ": " + why
	}
	return &mismatchError{msg}
}

// planAvro matches an Arrow type against an Avro type.
func planAvro(path string, t arrow.DataType, nullable bool, n *avroschema.Node) (*avroEnc, error) {
	e := &avroEnc{node: n, path: path, branch: -1, null: -1}
	if n.Kind == avroschema.Union {
		for i, b := range n.Branches {
			if b.Kind == avroschema.Null {
				e.null = i
			}
		}
		var firstErr error
		for i, b := range n.Branches {
			if b.Kind == avroschema.Null {
				continue
			}
			inner, err := planAvro(path, t, false, b)
			if err == nil {
				e.branch, e.inner = i, inner
				break
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if e.branch < 0 && t.ID() != arrow.NULL {
			if firstErr == nil {
				firstErr = mismatch(path, t, n, "")
			}
			return nil, firstErr
		}
		e.op = "union"
		return e, nil
	}
	id := t.ID()
	ok := false
	switch n.Kind {
	case avroschema.Null:
		ok = id == arrow.NULL
	case avroschema.Boolean:
		ok = id == arrow.BOOL
	case avroschema.Int, avroschema.Long:
		switch {
		case n.Logical == "date" && id == arrow.DATE32:
			ok = true
		case (n.Logical == "timestamp-millis" || n.Logical == "timestamp-micros" ||
			n.Logical == "local-timestamp-millis" || n.Logical == "local-timestamp-micros") && id == arrow.TIMESTAMP:
			want := map[bool]int64{true: 1000, false: 1_000_000}[n.Logical == "timestamp-millis" || n.Logical == "local-timestamp-millis"]
			per := map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1000, arrow.Microsecond: 1_000_000, arrow.Nanosecond: 1_000_000_000}[t.(*arrow.TimestampType).Unit]
			if per >= want {
				e.unit = -(per / want)
			} else {
				e.unit = want / per
			}
			ok = true
		case id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32 || id == arrow.UINT8 || id == arrow.UINT16:
			ok = true
		case (id == arrow.INT64 || id == arrow.UINT32) && n.Kind == avroschema.Long:
			ok = true
		}
	case avroschema.Float, avroschema.Double:
		ok = id == arrow.FLOAT32 || id == arrow.FLOAT64 && n.Kind == avroschema.Double ||
			id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32 || id == arrow.INT64
	case avroschema.String:
		ok = id == arrow.STRING || id == arrow.LARGE_STRING
	case avroschema.Bytes, avroschema.Fixed:
		if n.Logical == "decimal" {
			if d, isDec := t.(*arrow.Decimal128Type); isDec {
				if int(d.Scale) != n.Scale {
					return nil, mismatch(path, t, n, fmt.Sprintf("the scales differ (%d, the schema's %d): cast the column to decimal(p,%d)", d.Scale, n.Scale, n.Scale))
				}
				ok = true
			}
		} else {
			ok = id == arrow.BINARY || id == arrow.LARGE_BINARY || (n.Kind == avroschema.Bytes && (id == arrow.STRING || id == arrow.LARGE_STRING))
		}
	case avroschema.Enum:
		ok = id == arrow.STRING || id == arrow.LARGE_STRING
		e.symIdx = map[string]int{}
		for i, s := range n.Symbols {
			e.symIdx[s] = i
		}
	case avroschema.Array:
		var elem arrow.Field
		switch lt := t.(type) {
		case *arrow.ListType:
			elem = lt.ElemField()
		case *arrow.LargeListType:
			elem = lt.ElemField()
		default:
			return nil, mismatch(path, t, n, "")
		}
		inner, err := planAvro(path+"[]", elem.Type, elem.Nullable, n.Items)
		if err != nil {
			return nil, err
		}
		e.inner, ok = inner, true
	case avroschema.Map:
		mt, isMap := t.(*arrow.MapType)
		if !isMap {
			return nil, mismatch(path, t, n, "")
		}
		if k := mt.KeyType().ID(); k != arrow.STRING && k != arrow.LARGE_STRING {
			return nil, mismatch(path, t, n, "Avro map keys are strings")
		}
		inner, err := planAvro(path+"{}", mt.ItemType(), mt.ItemField().Nullable, n.Items)
		if err != nil {
			return nil, err
		}
		e.inner, ok = inner, true
	case avroschema.Record:
		st, isStruct := t.(*arrow.StructType)
		if !isStruct {
			return nil, mismatch(path, t, n, "")
		}
		p, err := planRecord(path+".", st.Fields(), n)
		if err != nil {
			return nil, err
		}
		p.path = path
		return p, nil
	}
	if !ok {
		return nil, mismatch(path, t, n, "")
	}
	e.op = n.Kind.String()
	return e, nil
}

// planRecord matches columns (a batch's or a struct's) to a record's
// fields by name. A field without a column takes its default; a column
// without a field is an error (it would be dropped silently).
func planRecord(prefix string, cols []arrow.Field, n *avroschema.Node) (*avroEnc, error) {
	e := &avroEnc{node: n, op: "record", branch: -1, null: -1}
	used := make([]bool, len(cols))
	for _, f := range n.Fields {
		idx := slices.IndexFunc(cols, func(c arrow.Field) bool { return c.Name == f.Name })
		if idx < 0 {
			if !f.HasDefault {
				return nil, &mismatchError{fmt.Sprintf("no column %s%s for field %q of %s (type %s), which has no default", prefix, f.Name, f.Name, n.Name, f.Type)}
			}
			e.fields, e.cols = append(e.fields, nil), append(e.cols, -1)
			continue
		}
		used[idx] = true
		fe, err := planAvro(prefix+f.Name, cols[idx].Type, cols[idx].Nullable, f.Type)
		if err != nil {
			return nil, err
		}
		e.fields, e.cols = append(e.fields, fe), append(e.cols, idx)
	}
	for i, c := range cols {
		if !used[i] {
			return nil, &mismatchError{fmt.Sprintf("column %s%s (%s) is not a field of %s; the fields are %s", prefix, c.Name, c.Type, n.Name, fieldNames(n))}
		}
	}
	return e, nil
}

func fieldNames(n *avroschema.Node) string {
	names := make([]string, len(n.Fields))
	for i, f := range n.Fields {
		names[i] = f.Name
	}
	return fmt.Sprint(names)
}

// nullError is a null where the schema has no null: it names the column and row.
func nullError(path string, n *avroschema.Node, row int) error {
	return fmt.Errorf("row %d: column %s is null but the schema's %s is not nullable (make it a union with \"null\", or fill the nulls)", row, path, n)
}

// appendBin appends value i of a in Avro binary encoding.
func (e *avroEnc) appendBin(b []byte, a arrow.Array, i, row int) ([]byte, error) {
	if e.op != "union" && e.op != "record" && a.IsNull(i) && e.node.Kind != avroschema.Null {
		return b, nullError(e.path, e.node, row)
	}
	switch e.op {
	case "union":
		if a.IsNull(i) {
			if e.null < 0 {
				return b, nullError(e.path, e.node, row)
			}
			return binary.AppendVarint(b, int64(e.null)), nil
		}
		b = binary.AppendVarint(b, int64(e.branch))
		return e.inner.appendBin(b, a, i, row)
	case "null":
		return b, nil
	case "boolean":
		if a.(*array.Boolean).Value(i) {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case "int", "long":
		return binary.AppendVarint(b, e.integer(a, i)), nil
	case "float":
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(floatOf(a, i)))), nil
	case "double":
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(floatOf(a, i))), nil
	case "string", "bytes", "fixed":
		v := e.bytesOf(a, i)
		if e.op == "fixed" {
			if len(v) != e.node.Size {
				return b, fmt.Errorf("row %d: column %s has %d bytes; the schema's %s takes exactly %d", row, e.path, len(v), e.node, e.node.Size)
			}
			return append(b, v...), nil
		}
		b = binary.AppendVarint(b, int64(len(v)))
		return append(b, v...), nil
	case "enum":
		s := string(stringBytes(a, i))
		idx, ok := e.symIdx[s]
		if !ok {
			return b, fmt.Errorf("row %d: column %s is %q, not a symbol of %s %v", row, e.path, s, e.node, e.node.Symbols)
		}
		return binary.AppendVarint(b, int64(idx)), nil
	case "array", "map":
		child, start, end := listRange(a, i)
		if end > start {
			b = binary.AppendVarint(b, int64(end-start))
			for j := start; j < end; j++ {
				var err error
				if e.op == "map" {
					m := child.(*array.Struct)
					k := stringBytes(m.Field(0), j)
					b = binary.AppendVarint(b, int64(len(k)))
					b = append(b, k...)
					b, err = e.inner.appendBin(b, m.Field(1), j, row)
				} else {
					b, err = e.inner.appendBin(b, child, j, row)
				}
				if err != nil {
					return b, err
				}
			}
		}
		return append(b, 0), nil
	case "record":
		s, _ := a.(*array.Struct)
		if s != nil && s.IsNull(i) {
			return b, nullError(e.path, e.node, row)
		}
		for k, f := range e.fields {
			var err error
			if f == nil {
				b, err = appendDefaultBin(b, e.node.Fields[k].Type, e.node.Fields[k].Default)
			} else {
				b, err = f.appendBin(b, s.Field(e.cols[k]), i, row)
			}
			if err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return b, fmt.Errorf("encode: unplanned op %q", e.op)
}

// appendDefaultBin writes a field's default: the common defaults (null,
// and scalars) of fields a batch leaves out.
func appendDefaultBin(b []byte, n *avroschema.Node, def any) ([]byte, error) {
	if n.Kind == avroschema.Union {
		// A union's default is of its first branch.
		b = binary.AppendVarint(b, 0)
		n = n.Branches[0]
	}
	switch n.Kind {
	case avroschema.Null:
		return b, nil
	case avroschema.Boolean:
		if def == true {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case avroschema.Int, avroschema.Long:
		if n, ok := def.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				return binary.AppendVarint(b, i), nil
			}
		}
		return binary.AppendVarint(b, int64(defaultFloat(def))), nil
	case avroschema.Float:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(defaultFloat(def)))), nil
	case avroschema.Double:
		f := defaultFloat(def)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(f)), nil
	case avroschema.String, avroschema.Bytes:
		s, _ := def.(string)
		b = binary.AppendVarint(b, int64(len(s)))
		return append(b, s...), nil
	case avroschema.Enum:
		s, _ := def.(string)
		return binary.AppendVarint(b, int64(max(0, slices.Index(n.Symbols, s)))), nil
	case avroschema.Array, avroschema.Map:
		return append(b, 0), nil
	}
	return b, fmt.Errorf("a default of type %s is not supported: add the column", n)
}

// defaultFloat is a numeric default (the schema parser keeps numbers as
// json.Number).
func defaultFloat(def any) float64 {
	if n, ok := def.(json.Number); ok {
		f, _ := n.Float64()
		return f
	}
	f, _ := def.(float64)
	return f
}

func (e *avroEnc) integer(a arrow.Array, i int) int64 {
	switch v := a.(type) {
	case *array.Int8:
		return int64(v.Value(i))
	case *array.Int16:
		return int64(v.Value(i))
	case *array.Int32:
		return int64(v.Value(i))
	case *array.Int64:
		return v.Value(i)
	case *array.Uint8:
		return int64(v.Value(i))
	case *array.Uint16:
		return int64(v.Value(i))
	case *array.Uint32:
		return int64(v.Value(i))
	case *array.Date32:
		return int64(v.Value(i))
	case *array.Timestamp:
		t := int64(v.Value(i))
		if e.unit < 0 {
			q := t / -e.unit
			if t%-e.unit < 0 {
				q--
			}
			return q
		}
		return t * e.unit
	}
	return 0
}

func floatOf(a arrow.Array, i int) float64 {
	switch v := a.(type) {
	case *array.Float32:
		return float64(v.Value(i))
	case *array.Float64:
		return v.Value(i)
	case *array.Int8:
		return float64(v.Value(i))
	case *array.Int16:
		return float64(v.Value(i))
	case *array.Int32:
		return float64(v.Value(i))
	case *array.Int64:
		return float64(v.Value(i))
	}
	return 0
}

// bytesOf is a string, binary or decimal value's bytes (a decimal as its
// big-endian two's-complement unscaled value, sign-extended to a fixed's size).
func (e *avroEnc) bytesOf(a arrow.Array, i int) []byte {
	if d, ok := a.(*array.Decimal128); ok {
		return decimalBytes(d.Value(i), e.node.Size)
	}
	return stringBytes(a, i)
}

func decimalBytes(v decimal128.Num, size int) []byte {
	bi := v.BigInt()
	n := minimalTwos(bi)
	if size > len(n) {
		pad := byte(0)
		if bi.Sign() < 0 {
			pad = 0xff
		}
		n = append(slices.Repeat([]byte{pad}, size-len(n)), n...)
	}
	return n
}

// minimalTwos is the shortest big-endian two's complement of v.
func minimalTwos(v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -v - 1, complemented.
	m := new(big.Int).Neg(v)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	for k := range b {
		b[k] = ^b[k]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

func stringBytes(a arrow.Array, i int) []byte {
	switch v := a.(type) {
	case *array.String:
		return []byte(v.Value(i))
	case *array.LargeString:
		return []byte(v.Value(i))
	case *array.Binary:
		return v.Value(i)
	case *array.LargeBinary:
		return v.Value(i)
	}
	return nil
}

// listRange is the child array and the entries of list (or map) value i.
func listRange(a arrow.Array, i int) (arrow.Array, int, int) {
	switch v := a.(type) {
	case *array.Map:
		s, e := v.ValueOffsets(i)
		return v.ListValues(), int(s), int(e)
	case *array.List:
		s, e := v.ValueOffsets(i)
		return v.ListValues(), int(s), int(e)
	case *array.LargeList:
		s, e := v.ValueOffsets(i)
		return v.ListValues(), int(s), int(e)
	}
	return nil, 0, 0
}

// appendJSON appends value i of a in Avro's JSON encoding (unions as
// {"branch": value}, bytes as one code point per byte).
func (e *avroEnc) appendJSON(b []byte, a arrow.Array, i, row int) ([]byte, error) {
	if e.op != "union" && e.op != "record" && a.IsNull(i) && e.node.Kind != avroschema.Null {
		return b, nullError(e.path, e.node, row)
	}
	switch e.op {
	case "union":
		if a.IsNull(i) {
			if e.null < 0 {
				return b, nullError(e.path, e.node, row)
			}
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		b = appendJSONString(b, e.node.Branches[e.branch].TypeName())
		b = append(b, ':')
		b, err := e.inner.appendJSON(b, a, i, row)
		return append(b, '}'), err
	case "null":
		return append(b, "null"...), nil
	case "boolean":
		return strconv.AppendBool(b, a.(*array.Boolean).Value(i)), nil
	case "int", "long":
		return strconv.AppendInt(b, e.integer(a, i), 10), nil
	case "float", "double":
		f := floatOf(a, i)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return b, fmt.Errorf("row %d: column %s is %v, which Avro's JSON encoding cannot write", row, e.path, f)
		}
		bits := 64
		if e.op == "float" {
			bits = 32
		}
		return strconv.AppendFloat(b, f, 'g', -1, bits), nil
	case "string":
		return appendJSONString(b, string(stringBytes(a, i))), nil
	case "bytes", "fixed":
		v := e.bytesOf(a, i)
		if e.op == "fixed" && len(v) != e.node.Size {
			return b, fmt.Errorf("row %d: column %s has %d bytes; the schema's %s takes exactly %d", row, e.path, len(v), e.node, e.node.Size)
		}
		r := make([]rune, len(v))
		for k, c := range v {
			r[k] = rune(c)
		}
		return appendJSONString(b, string(r)), nil
	case "enum":
		s := string(stringBytes(a, i))
		if _, ok := e.symIdx[s]; !ok {
			return b, fmt.Errorf("row %d: column %s is %q, not a symbol of %s %v", row, e.path, s, e.node, e.node.Symbols)
		}
		return appendJSONString(b, s), nil
	case "array", "map":
		child, start, end := listRange(a, i)
		open, close := byte('['), byte(']')
		if e.op == "map" {
			open, close = '{', '}'
		}
		b = append(b, open)
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			var err error
			if e.op == "map" {
				m := child.(*array.Struct)
				b = appendJSONString(b, string(stringBytes(m.Field(0), j)))
				b = append(b, ':')
				b, err = e.inner.appendJSON(b, m.Field(1), j, row)
			} else {
				b, err = e.inner.appendJSON(b, child, j, row)
			}
			if err != nil {
				return b, err
			}
		}
		return append(b, close), nil
	case "record":
		s, _ := a.(*array.Struct)
		if s != nil && s.IsNull(i) {
			return b, nullError(e.path, e.node, row)
		}
		b = append(b, '{')
		for k, f := range e.fields {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, e.node.Fields[k].Name)
			b = append(b, ':')
			var err error
			if f == nil {
				b, err = appendDefaultJSON(b, e.node.Fields[k].Type, e.node.Fields[k].Default)
			} else {
				b, err = f.appendJSON(b, s.Field(e.cols[k]), i, row)
			}
			if err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	return b, fmt.Errorf("encode: unplanned op %q", e.op)
}

func appendDefaultJSON(b []byte, n *avroschema.Node, def any) ([]byte, error) {
	if n.Kind == avroschema.Union {
		if n.Branches[0].Kind == avroschema.Null {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		b = appendJSONString(b, n.Branches[0].TypeName())
		b = append(b, ':')
		b, err := appendDefaultJSON(b, n.Branches[0], def)
		return append(b, '}'), err
	}
	v, err := jsonMarshal(def)
	return append(b, v...), err
}

func appendJSONString(b []byte, s string) []byte {
	v, _ := jsonMarshal(s)
	return append(b, v...)
}
