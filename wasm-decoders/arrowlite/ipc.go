package arrowlite

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Arrow IPC encapsulation: a continuation marker, the flatbuffer Message
// length, the Message padded to 8 bytes, then the body.
const (
	continuation  = 0xFFFFFFFF
	metadataV5    = 4
	headerSchema  = 1
	headerBatch   = 3
	maxSchemaNest = 64
)

// ReadSchema reads the schema from the first message of an Arrow IPC
// stream (as written by pyarrow's Schema.serialize() or an IPC stream
// writer). Anything after the schema message is ignored.
func ReadSchema(b []byte) (s *Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			if r != errFlatbuf {
				panic(r)
			}
			s, err = nil, errors.New("arrowlite: malformed IPC schema")
		}
	}()
	if len(b) < 8 {
		return nil, errors.New("arrowlite: IPC schema too short")
	}
	n, off := binary.LittleEndian.Uint32(b), 4
	if n == continuation {
		n, off = binary.LittleEndian.Uint32(b[4:]), 8
	}
	if int64(n) > int64(len(b)-off) || n < 4 {
		return nil, errors.New("arrowlite: IPC schema length out of range")
	}
	msg := fbRoot(b[off : off+int(n)])
	if msg.u8At(1, 0) != headerSchema {
		return nil, errors.New("arrowlite: first IPC message is not a schema")
	}
	st, ok := msg.tableAt(2)
	if !ok {
		return nil, errors.New("arrowlite: schema message without schema")
	}
	if st.i16At(0, 0) != 0 {
		return nil, errors.New("arrowlite: big-endian schemas are not supported")
	}
	s = &Schema{Metadata: readMetadata(st, 2)}
	for _, ft := range st.tables(1) {
		f, err := readField(ft, 0)
		if err != nil {
			return nil, err
		}
		s.Fields = append(s.Fields, f)
	}
	return s, nil
}

func readMetadata(t fbTable, slot int) []KeyValue {
	var kvs []KeyValue
	for _, kv := range t.tables(slot) {
		kvs = append(kvs, KeyValue{kv.stringAt(0), kv.stringAt(1)})
	}
	return kvs
}

func readField(ft fbTable, depth int) (Field, error) {
	if depth > maxSchemaNest {
		return Field{}, errors.New("arrowlite: schema nested too deeply")
	}
	f := Field{Name: ft.stringAt(0), Nullable: ft.boolAt(1, false), Metadata: readMetadata(ft, 6)}
	if _, dict := ft.tableAt(4); dict {
		return f, fmt.Errorf("arrowlite: field %q: dictionary encoding is not supported", f.Name)
	}
	t := &DataType{ID: TypeID(ft.u8At(2, 0))}
	tt, _ := ft.tableAt(3)
	switch t.ID {
	case Int:
		t.BitWidth, t.Signed = tt.i32At(0, 0), tt.boolAt(1, false)
	case FloatingPoint:
		t.Precision = int32(tt.i16At(0, Half))
	case Decimal:
		t.Precision, t.Scale, t.BitWidth = tt.i32At(0, 0), tt.i32At(1, 0), tt.i32At(2, 128)
	case Date:
		t.Unit = tt.i16At(0, DateMillisecond)
	case Timestamp:
		t.Unit, t.TimeZone = tt.i16At(0, Second), tt.stringAt(1)
	case Map:
		t.KeysSorted = tt.boolAt(0, false)
	}
	for _, ct := range ft.tables(5) {
		c, err := readField(ct, depth+1)
		if err != nil {
			return f, err
		}
		t.Children = append(t.Children, c)
	}
	if err := t.Validate(); err != nil {
		return f, fmt.Errorf("arrowlite: field %q: %w", f.Name, err)
	}
	f.Type = t
	return f, nil
}

// AppendSchemaMessage appends the encapsulated IPC schema message of s.
func AppendSchemaMessage(dst []byte, s *Schema) []byte {
	fields := make(fbTables, len(s.Fields))
	for i := range s.Fields {
		fields[i] = fieldObj(&s.Fields[i])
	}
	schema := fbTableObj{fbI16(0), fbRef(fields), metadataObj(s.Metadata)}
	msg := fbTableObj{fbI16(metadataV5), fbU8(headerSchema), fbRef(schema), fbI64(0)}
	return appendMessage(dst, msg, nil)
}

func metadataObj(kvs []KeyValue) fbField {
	if len(kvs) == 0 {
		return fbField{}
	}
	v := make(fbTables, len(kvs))
	for i, kv := range kvs {
		v[i] = fbTableObj{fbRef(fbString(kv.Key)), fbRef(fbString(kv.Value))}
	}
	return fbRef(v)
}

func fieldObj(f *Field) fbObj {
	t := f.Type
	var typ fbTableObj
	switch t.ID {
	case Int:
		typ = fbTableObj{fbI32(t.BitWidth), fbBool(t.Signed)}
	case FloatingPoint:
		typ = fbTableObj{fbI16(int16(t.Precision))}
	case Decimal:
		typ = fbTableObj{fbI32(t.Precision), fbI32(t.Scale), fbI32(t.BitWidth)}
	case Date:
		typ = fbTableObj{fbI16(t.Unit)}
	case Timestamp:
		typ = fbTableObj{fbI16(t.Unit), fbField{}}
		if t.TimeZone != "" {
			typ[1] = fbRef(fbString(t.TimeZone))
		}
	case Map:
		typ = fbTableObj{fbBool(t.KeysSorted)}
	default:
		typ = fbTableObj{}
	}
	children := make(fbTables, len(t.Children))
	for i := range t.Children {
		children[i] = fieldObj(&t.Children[i])
	}
	return fbTableObj{
		fbRef(fbString(f.Name)), fbBool(f.Nullable), fbU8(uint8(t.ID)), fbRef(typ),
		fbField{}, fbRef(children), metadataObj(f.Metadata),
	}
}

// appendMessage frames a Message flatbuffer and its body.
func appendMessage(dst []byte, msg fbTableObj, body []byte) []byte {
	var w fbWriter
	meta := w.finish(msg)
	padded := (len(meta) + 7) &^ 7
	dst = binary.LittleEndian.AppendUint32(dst, continuation)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(padded))
	dst = append(dst, meta...)
	dst = append(dst, make([]byte, padded-len(meta))...)
	return append(dst, body...)
}

// AppendEOS appends the end-of-stream marker.
func AppendEOS(dst []byte) []byte {
	return binary.LittleEndian.AppendUint64(dst, continuation)
}

// EncodeSchema returns s as a standalone IPC schema message, the form the
// decoder ABI passes in its config.
func EncodeSchema(s *Schema) []byte { return AppendSchemaMessage(nil, s) }
