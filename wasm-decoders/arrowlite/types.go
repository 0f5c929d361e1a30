// Package arrowlite is the small subset of Apache Arrow that decoders need
// inside a WebAssembly guest: a data type model, reading a schema from Arrow
// IPC bytes, column builders, and writing one record batch as an Arrow IPC
// stream. The full arrow-go library compiles to wasip1 but makes modules ten
// times larger (and ten times slower to compile on every host), so guests
// use this instead.
package arrowlite

import (
	"fmt"
	"strings"
)

// TypeID is the Arrow type, numbered as in the IPC schema (Schema.fbs).
type TypeID uint8

// Supported type ids.
const (
	Null          TypeID = 1
	Int           TypeID = 2
	FloatingPoint TypeID = 3
	Binary        TypeID = 4
	Utf8          TypeID = 5
	Bool          TypeID = 6
	Decimal       TypeID = 7
	Date          TypeID = 8
	Timestamp     TypeID = 10
	List          TypeID = 12
	Struct        TypeID = 13
	Map           TypeID = 17
)

// Float precisions (FloatingPoint.precision).
const (
	Half   int16 = 0
	Single int16 = 1
	Double int16 = 2
)

// Date units (Date.unit).
const (
	DateDay         int16 = 0
	DateMillisecond int16 = 1
)

// Time units (Timestamp.unit).
const (
	Second      int16 = 0
	Millisecond int16 = 1
	Microsecond int16 = 2
	Nanosecond  int16 = 3
)

// DataType describes one Arrow type. Only the fields of its ID are used.
type DataType struct {
	ID         TypeID
	BitWidth   int32 // Int: 8..64; Decimal: 128
	Signed     bool  // Int
	Precision  int32 // Decimal precision, or the FloatingPoint precision
	Scale      int32 // Decimal
	Unit       int16 // Date, Timestamp
	TimeZone   string
	KeysSorted bool    // Map
	Children   []Field // Struct fields; List item; Map entries struct
}

// Field is a named, possibly nullable column or child.
type Field struct {
	Name     string
	Nullable bool
	Type     *DataType
	Metadata []KeyValue
}

// KeyValue is one custom metadata entry; order is kept.
type KeyValue struct{ Key, Value string }

// Schema is a list of top-level fields.
type Schema struct {
	Fields   []Field
	Metadata []KeyValue
}

// FieldIndex returns the index of the first field with the given name, or -1.
func (s *Schema) FieldIndex(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// Constructors for the common types.
func NullType() *DataType { return &DataType{ID: Null} }
func BoolType() *DataType { return &DataType{ID: Bool} }
func IntType(bits int32, signed bool) *DataType {
	return &DataType{ID: Int, BitWidth: bits, Signed: signed}
}
func Float32Type() *DataType { return &DataType{ID: FloatingPoint, Precision: int32(Single)} }
func Float64Type() *DataType { return &DataType{ID: FloatingPoint, Precision: int32(Double)} }
func Utf8Type() *DataType    { return &DataType{ID: Utf8} }
func BinaryType() *DataType  { return &DataType{ID: Binary} }
func Date32Type() *DataType  { return &DataType{ID: Date, Unit: DateDay} }
func DecimalType(p, s int32) *DataType {
	return &DataType{ID: Decimal, Precision: p, Scale: s, BitWidth: 128}
}
func StructType(fields ...Field) *DataType { return &DataType{ID: Struct, Children: fields} }
func TimestampType(unit int16, tz string) *DataType {
	return &DataType{ID: Timestamp, Unit: unit, TimeZone: tz}
}

// ListType is a list whose items are described by item.
func ListType(item Field) *DataType { return &DataType{ID: List, Children: []Field{item}} }

// MapType is map<key, value> laid out as Arrow requires: a list of
// non-null "entries" structs with a non-null "key" and a "value".
func MapType(key *DataType, value Field) *DataType {
	value.Name = "value"
	entries := Field{Name: "entries", Type: StructType(Field{Name: "key", Type: key}, value)}
	return &DataType{ID: Map, Children: []Field{entries}}
}

// Width is the size in bytes of one value of a fixed-width type, 0 for
// variable-width and nested types and for Bool (bit-packed).
func (t *DataType) Width() int {
	switch t.ID {
	case Int:
		return int(t.BitWidth / 8)
	case FloatingPoint:
		switch int16(t.Precision) {
		case Half:
			return 2
		case Single:
			return 4
		}
		return 8
	case Decimal:
		return int(t.BitWidth / 8)
	case Date:
		if t.Unit == DateDay {
			return 4
		}
		return 8
	case Timestamp:
		return 8
	}
	return 0
}

// Validate reports types this package cannot build.
func (t *DataType) Validate() error {
	switch t.ID {
	case Null, Bool, Utf8, Binary, Date, Timestamp:
		return nil
	case Int:
		switch t.BitWidth {
		case 8, 16, 32, 64:
			return nil
		}
		return fmt.Errorf("int bit width %d", t.BitWidth)
	case FloatingPoint:
		if int16(t.Precision) == Single || int16(t.Precision) == Double {
			return nil
		}
		return fmt.Errorf("half floats are not supported")
	case Decimal:
		if t.BitWidth != 128 {
			return fmt.Errorf("decimal%d is not supported (only decimal128)", t.BitWidth)
		}
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return fmt.Errorf("decimal(%d, %d) is out of range", t.Precision, t.Scale)
		}
		return nil
	case List:
		if len(t.Children) != 1 {
			return fmt.Errorf("list needs one child")
		}
		return t.Children[0].Type.Validate()
	case Struct:
		for _, c := range t.Children {
			if err := c.Type.Validate(); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
		return nil
	case Map:
		if len(t.Children) != 1 || t.Children[0].Type.ID != Struct || len(t.Children[0].Type.Children) != 2 {
			return fmt.Errorf("map needs an entries struct of key and value")
		}
		return t.Children[0].Type.Validate()
	}
	return fmt.Errorf("arrow type id %d is not supported", t.ID)
}

// String renders the type roughly as pyarrow does, for error messages.
func (t *DataType) String() string {
	switch t.ID {
	case Null:
		return "null"
	case Bool:
		return "bool"
	case Int:
		if t.Signed {
			return fmt.Sprintf("int%d", t.BitWidth)
		}
		return fmt.Sprintf("uint%d", t.BitWidth)
	case FloatingPoint:
		return [...]string{"halffloat", "float", "double"}[t.Precision%3]
	case Utf8:
		return "string"
	case Binary:
		return "binary"
	case Decimal:
		return fmt.Sprintf("decimal%d(%d, %d)", t.BitWidth, t.Precision, t.Scale)
	case Date:
		if t.Unit == DateDay {
			return "date32"
		}
		return "date64"
	case Timestamp:
		u := [...]string{"s", "ms", "us", "ns"}[t.Unit&3]
		if t.TimeZone != "" {
			return fmt.Sprintf("timestamp[%s, tz=%s]", u, t.TimeZone)
		}
		return fmt.Sprintf("timestamp[%s]", u)
	case List:
		return "list<" + t.Children[0].Type.String() + ">"
	case Map:
		kv := t.Children[0].Type.Children
		return "map<" + kv[0].Type.String() + ", " + kv[1].Type.String() + ">"
	case Struct:
		parts := make([]string, len(t.Children))
		for i, c := range t.Children {
			parts[i] = c.Name + ": " + c.Type.String()
		}
		return "struct<" + strings.Join(parts, ", ") + ">"
	}
	return fmt.Sprintf("type#%d", t.ID)
}
