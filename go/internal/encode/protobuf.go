package encode

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pubsub-go/pubsub-go/go/internal/protoschema"
)

// protoMessage is the message type a PROTOCOL_BUFFER schema's rows are
// encoded to: the first message its source defines, as Pub/Sub takes it.
func protoMessage(source string) (protoreflect.MessageDescriptor, error) {
	s, err := protoschema.Compile(source)
	if err != nil {
		return nil, err
	}
	return s.Message()
}

// protoEnc sets one field of a message from one Arrow array.
type protoEnc struct {
	fd     protoreflect.FieldDescriptor
	path   string
	elem   *protoEnc   // list elements, map values
	fields []*protoEnc // message: by the message's field order; nil: no column
	cols   []int
}

func protoKind(fd protoreflect.FieldDescriptor) string {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		return "message " + string(fd.Message().FullName())
	}
	if fd.Kind() == protoreflect.EnumKind {
		return "enum " + string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

func protoMismatch(path string, t arrow.DataType, fd protoreflect.FieldDescriptor, why string) error {
	label := ""
	if fd.IsList() {
		label = "repeated "
	}
	msg := fmt.Sprintf("column %s has type %s, which does not fit the schema's %s%s", path, t, label, protoKind(fd))
	if why != "" {
		msg += ": " + why
	}
	return &mismatchError{msg}
}

// planProtoMessage matches columns to a message's fields by name; a field
// without a column is left unset, a column without a field is an error.
func planProtoMessage(prefix string, cols []arrow.Field, md protoreflect.MessageDescriptor) (*protoEnc, error) {
	e := &protoEnc{}
	used := make([]bool, len(cols))
	fields := md.Fields()
	for k := range fields.Len() {
		fd := fields.Get(k)
		idx := slices.IndexFunc(cols, func(c arrow.Field) bool { return c.Name == string(fd.Name()) })
		if idx < 0 {
			e.fields, e.cols = append(e.fields, nil), append(e.cols, -1)
			continue
		}
		used[idx] = true
		fe, err := planProtoField(prefix+string(fd.Name()), cols[idx].Type, fd, fd.IsList())
		if err != nil {
			return nil, err
		}
		e.fields, e.cols = append(e.fields, fe), append(e.cols, idx)
	}
	for i, c := range cols {
		if !used[i] {
			names := make([]string, fields.Len())
			for k := range fields.Len() {
				names[k] = string(fields.Get(k).Name())
			}
			return nil, &mismatchError{fmt.Sprintf("column %s%s (%s) is not a field of %s; the fields are %v", prefix, c.Name, c.Type, md.FullName(), names)}
		}
	}
	return e, nil
}

// planProtoField: list says the Arrow value is the whole repeated field.
func planProtoField(path string, t arrow.DataType, fd protoreflect.FieldDescriptor, list bool) (*protoEnc, error) {
	e := &protoEnc{fd: fd, path: path}
	if fd.IsMap() {
		mt, ok := t.(*arrow.MapType)
		if !ok || !isStringType(mt.KeyType()) || fd.MapKey().Kind() != protoreflect.StringKind {
			return nil, protoMismatch(path, t, fd, "a map<string, T> column fits a map<string, T> field")
		}
		v, err := planProtoField(path+"{}", mt.ItemType(), fd.MapValue(), false)
		e.elem = v
		return e, err
	}
	if list {
		var elem arrow.DataType
		switch lt := t.(type) {
		case *arrow.ListType:
			elem = lt.Elem()
		case *arrow.LargeListType:
			elem = lt.Elem()
		default:
			return nil, protoMismatch(path, t, fd, "")
		}
		v, err := planProtoField(path+"[]", elem, fd, false)
		e.elem = v
		return e, err
	}
	id := t.ID()
	ok := false
	switch fd.Kind() {
	case protoreflect.BoolKind:
		ok = id == arrow.BOOL
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		ok = id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		ok = id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32 || id == arrow.INT64
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		ok = id == arrow.UINT8 || id == arrow.UINT16 || id == arrow.UINT32 || id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		ok = id == arrow.UINT8 || id == arrow.UINT16 || id == arrow.UINT32 || id == arrow.UINT64 || id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32 || id == arrow.INT64
	case protoreflect.FloatKind:
		ok = id == arrow.FLOAT32
	case protoreflect.DoubleKind:
		ok = id == arrow.FLOAT32 || id == arrow.FLOAT64
	case protoreflect.StringKind:
		ok = isStringType(t)
	case protoreflect.BytesKind:
		ok = id == arrow.BINARY || id == arrow.LARGE_BINARY
	case protoreflect.EnumKind:
		ok = isStringType(t) || id == arrow.INT32
	case protoreflect.MessageKind:
		st, isStruct := t.(*arrow.StructType)
		if !isStruct {
			return nil, protoMismatch(path, t, fd, "")
		}
		m, err := planProtoMessage(path+".", st.Fields(), fd.Message())
		if err != nil {
			return nil, err
		}
		m.fd, m.path = fd, path
		return m, nil
	}
	if !ok {
		return nil, protoMismatch(path, t, fd, "")
	}
	return e, nil
}

func isStringType(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

// setFields sets msg's fields from row i of the planned columns.
func (e *protoEnc) setFields(msg protoreflect.Message, col func(k int) arrow.Array, i, row int) error {
	fields := msg.Descriptor().Fields()
	for k, f := range e.fields {
		if f == nil {
			continue
		}
		a := col(k)
		if a.IsNull(i) {
			continue // unset: proto3's default, or absent
		}
		fd := fields.Get(k)
		switch {
		case fd.IsMap():
			child, start, end := listRange(a, i)
			entries := child.(*array.Struct)
			m := msg.Mutable(fd).Map()
			for j := start; j < end; j++ {
				if entries.Field(1).IsNull(j) {
					return fmt.Errorf("row %d: column %s has a null value for key %q; protobuf maps hold no nulls", row, f.path, stringBytes(entries.Field(0), j))
				}
				v, err := f.elem.value(m.NewValue, entries.Field(1), j, row)
				if err != nil {
					return err
				}
				m.Set(protoreflect.ValueOfString(string(stringBytes(entries.Field(0), j))).MapKey(), v)
			}
		case fd.IsList():
			child, start, end := listRange(a, i)
			l := msg.Mutable(fd).List()
			for j := start; j < end; j++ {
				if child.IsNull(j) {
					return fmt.Errorf("row %d: column %s has a null element; repeated fields hold no nulls", row, f.path)
				}
				v, err := f.elem.value(l.NewElement, child, j, row)
				if err != nil {
					return err
				}
				l.Append(v)
			}
		default:
			v, err := f.value(func() protoreflect.Value { return msg.NewField(fd) }, a, i, row)
			if err != nil {
				return err
			}
			msg.Set(fd, v)
		}
	}
	return nil
}

// value is one scalar or message value.
func (e *protoEnc) value(newMsg func() protoreflect.Value, a arrow.Array, i, row int) (protoreflect.Value, error) {
	fd := e.fd
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(a.(*array.Boolean).Value(i)), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32((&avroEnc{}).integer(a, i))), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64((&avroEnc{}).integer(a, i)), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		var v uint64
		if u, ok := a.(*array.Uint64); ok {
			v = u.Value(i)
		} else {
			n := (&avroEnc{}).integer(a, i)
			if n < 0 {
				return protoreflect.Value{}, fmt.Errorf("row %d: column %s is %d; the schema's %s is unsigned", row, e.path, n, fd.Kind())
			}
			v = uint64(n)
		}
		if fd.Kind() == protoreflect.Uint32Kind || fd.Kind() == protoreflect.Fixed32Kind {
			return protoreflect.ValueOfUint32(uint32(v)), nil
		}
		return protoreflect.ValueOfUint64(v), nil
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(floatOf(a, i))), nil
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(floatOf(a, i)), nil
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(string(stringBytes(a, i))), nil
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes(slices.Clone(stringBytes(a, i))), nil
	case protoreflect.EnumKind:
		if n, ok := a.(*array.Int32); ok {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n.Value(i))), nil
		}
		s := string(stringBytes(a, i))
		ev := fd.Enum().Values().ByName(protoreflect.Name(s))
		if ev == nil {
			return protoreflect.Value{}, fmt.Errorf("row %d: column %s is %q, not a value of enum %s", row, e.path, s, fd.Enum().FullName())
		}
		return protoreflect.ValueOfEnum(ev.Number()), nil
	case protoreflect.MessageKind:
		v := newMsg()
		s := a.(*array.Struct)
		err := e.setFields(v.Message(), func(k int) arrow.Array { return s.Field(e.cols[k]) }, i, row)
		return v, err
	}
	return protoreflect.Value{}, fmt.Errorf("encode: unplanned protobuf kind %s", fd.Kind())
}

// protoPayload encodes row i as the schema's message.
func (e *Encoder) protoPayload(buf []byte, rec arrow.RecordBatch, i int) ([]byte, error) {
	msg := dynamicpb.NewMessage(e.proto)
	if err := e.pplan.setFields(msg, func(k int) arrow.Array { return rec.Column(e.planCol[e.pplan.cols[k]]) }, i, i); err != nil {
		return buf, err
	}
	if e.json {
		b, err := protojson.MarshalOptions{}.Marshal(msg)
		return append(buf, b...), err
	}
	return proto.MarshalOptions{}.MarshalAppend(buf, msg)
}
