package protodec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// kind is how one value of a field is read from the wire and written.
type kind uint8

const (
	kBool      kind = iota
	kInt32          // varint truncated to 32 bits: int32, uint32 (Java's int, as Spark reads it)
	kSint32         // zigzag varint, 32 bits
	kInt64          // varint: int64, uint64 (Java's long)
	kSint64         // zigzag varint
	kFixed32        // fixed32, sfixed32
	kFixed64        // fixed64, sfixed64
	kFloat          // 32-bit IEEE
	kDouble         // 64-bit IEEE
	kString         // UTF-8 checked
	kBytes          // as is
	kEnum           // varint number, written as its name (or number)
	kMessage        // a nested struct
	kTimestamp      // seconds + nanos, written as microseconds
	kMap            // repeated entries of key (1) and value (2)
)

// field is the compiled decoding of one protobuf field into one Arrow
// target (for a repeated field, target is the list and t its item type).
type field struct {
	num      protowire.Number
	name     string
	kind     kind
	wire     protowire.Type // the wire type of one unpacked value
	list     bool           // repeated, not a map
	packable bool           // a repeated scalar: packed runs are accepted too
	presence bool           // explicit presence: a zero on the wire is a value, not null
	scalar   bool           // neither repeated nor a map, a message or a Timestamp: its last occurrence is its value
	def      *constant      // proto2 [default = ...], written when the field is absent
	zero     constant       // the type's default (map entries without a key or value)
	oneof    int            // index into message.oneofs, -1 for none
	target   int            // output child; -1: recorded only to settle its oneof
	toFloat  bool           // an integer written to a floating-point column
	toInt    bool           // an enum written as its number
	enum     *enumNames
	msg      *message // kMessage (and a map value that is one)
	key, val *field   // kMap
}

// constant is a default value in the form its column takes.
type constant struct {
	i int64
	f float64
	s []byte
}

type enumNames struct {
	name   string // the enum's short name, for unknown numbers as Java names them
	dense  []string
	sparse map[int32]string
}

func (e *enumNames) lookup(n int32) string {
	if n >= 0 && int(n) < len(e.dense) && e.dense[n] != "" {
		return e.dense[n]
	}
	if s, ok := e.sparse[n]; ok {
		return s
	}
	// What protobuf-java's DynamicMessage names an open enum's unknown value.
	return "UNKNOWN_ENUM_VALUE_" + e.name + "_" + strconv.Itoa(int(n))
}

// message is the compiled decoding of a message type into a struct's
// children.
type message struct {
	fields  []*field
	accepts []uint8 // per field, a bit per wire type it is read from (the walker's hot loop checks it)
	dense   []int16 // field number → index+1, for small numbers
	sparse  map[protowire.Number]int
	oneofs  [][]int // the recorded member fields of each oneof
	missing []int   // output children no field feeds: null
}

func (m *message) lookup(n protowire.Number) int {
	if int(n) < len(m.dense) {
		return int(m.dense[n]) - 1
	}
	if i, ok := m.sparse[n]; ok {
		return i
	}
	return -1
}

// plan compiles md against the target struct fields (matched by name, as
// Spark matches them: exactly, else ignoring case). Target fields no
// protobuf field feeds are null; protobuf fields no target names are
// skipped on the wire.
func plan(md protoreflect.MessageDescriptor, targets []arrowlite.Field) (*message, error) {
	m := &message{}
	fds := md.Fields()
	oneofIdx := map[protoreflect.FullName]int{}
	used := map[protoreflect.Name]bool{}
	add := func(fd protoreflect.FieldDescriptor, target int, t *arrowlite.DataType) error {
		f, err := planField(fd, t)
		if err != nil {
			return fmt.Errorf("%s: %w", fd.Name(), err)
		}
		f.target, f.oneof = target, -1
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			i, ok := oneofIdx[od.FullName()]
			if !ok {
				i = len(m.oneofs)
				oneofIdx[od.FullName()] = i
				m.oneofs = append(m.oneofs, nil)
			}
			f.oneof = i
			m.oneofs[i] = append(m.oneofs[i], len(m.fields))
		}
		used[fd.Name()] = true
		m.fields = append(m.fields, f)
		return nil
	}
	for j, tf := range targets {
		fd := fds.ByName(protoreflect.Name(tf.Name))
		if fd == nil || used[fd.Name()] {
			fd = nil
			for i := 0; i < fds.Len(); i++ {
				if c := fds.Get(i); strings.EqualFold(string(c.Name()), tf.Name) && !used[c.Name()] {
					fd = c
					break
				}
			}
		}
		if fd == nil {
			m.missing = append(m.missing, j)
			continue
		}
		if err := add(fd, j, tf.Type); err != nil {
			return nil, err
		}
	}
	// A oneof member nobody reads still clears the member before it.
	ods := md.Oneofs()
	for i := 0; i < ods.Len(); i++ {
		od := ods.Get(i)
		if _, ok := oneofIdx[od.FullName()]; !ok || od.IsSynthetic() {
			continue
		}
		for k := 0; k < od.Fields().Len(); k++ {
			if fd := od.Fields().Get(k); !used[fd.Name()] {
				if err := add(fd, -1, nil); err != nil {
					return nil, err
				}
			}
		}
	}
	m.accepts = make([]uint8, len(m.fields))
	for i, f := range m.fields {
		m.accepts[i] = 1 << f.wire
		if f.packable {
			m.accepts[i] |= 1 << protowire.BytesType
		}
	}
	maxDense := 0
	for _, f := range m.fields {
		if f.num < 256 && int(f.num) >= maxDense {
			maxDense = int(f.num) + 1
		}
	}
	m.dense = make([]int16, maxDense)
	for i, f := range m.fields {
		if int(f.num) < maxDense {
			m.dense[f.num] = int16(i + 1)
		} else {
			if m.sparse == nil {
				m.sparse = map[protowire.Number]int{}
			}
			m.sparse[f.num] = i
		}
	}
	return m, nil
}

// planField compiles fd against its column type t (nil: not written).
func planField(fd protoreflect.FieldDescriptor, t *arrowlite.DataType) (*field, error) {
	f := &field{num: fd.Number(), name: string(fd.Name()), presence: fd.HasPresence()}
	switch {
	case fd.IsMap():
		f.kind, f.wire = kMap, protowire.BytesType
		var kt, vt *arrowlite.DataType
		if t != nil {
			if t.ID != arrowlite.Map {
				return nil, fmt.Errorf("a protobuf map cannot be decoded into %s", t)
			}
			kt, vt = t.Children[0].Type.Children[0].Type, t.Children[0].Type.Children[1].Type
		}
		var err error
		if f.key, err = planValue(fd.MapKey(), kt); err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		if f.val, err = planValue(fd.MapValue(), vt); err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		return f, nil
	case fd.IsList():
		if t != nil {
			if t.ID != arrowlite.List {
				return nil, fmt.Errorf("a repeated field cannot be decoded into %s", t)
			}
			t = t.Children[0].Type
		}
		v, err := planValue(fd, t)
		if err != nil {
			return nil, err
		}
		v.list, v.presence = true, false
		v.packable = v.wire != protowire.BytesType
		return v, nil
	}
	v, err := planValue(fd, t)
	if err != nil {
		return nil, err
	}
	v.presence = fd.HasPresence()
	v.scalar = v.kind != kMessage && v.kind != kTimestamp
	if fd.HasDefault() {
		c := constantOf(fd, fd.Default())
		v.def = &c
	}
	return v, nil
}

// planValue compiles one value of fd against t (nil: not written).
func planValue(fd protoreflect.FieldDescriptor, t *arrowlite.DataType) (*field, error) {
	f := &field{num: fd.Number(), name: string(fd.Name()), oneof: -1}
	mismatch := func() error {
		return fmt.Errorf("protobuf %s cannot be decoded into %s", fd.Kind(), t)
	}
	ints := func(bits int32) error {
		if t == nil {
			return nil
		}
		switch {
		case t.ID == arrowlite.Int && t.Signed && t.BitWidth >= bits:
		case t.ID == arrowlite.FloatingPoint:
			f.toFloat = true
		default:
			return mismatch()
		}
		return nil
	}
	var err error
	switch fd.Kind() {
	case protoreflect.BoolKind:
		f.kind, f.wire = kBool, protowire.VarintType
		if t != nil && t.ID != arrowlite.Bool {
			err = mismatch()
		}
	case protoreflect.Int32Kind, protoreflect.Uint32Kind:
		f.kind, f.wire, err = kInt32, protowire.VarintType, ints(32)
	case protoreflect.Sint32Kind:
		f.kind, f.wire, err = kSint32, protowire.VarintType, ints(32)
	case protoreflect.Int64Kind, protoreflect.Uint64Kind:
		f.kind, f.wire, err = kInt64, protowire.VarintType, ints(64)
	case protoreflect.Sint64Kind:
		f.kind, f.wire, err = kSint64, protowire.VarintType, ints(64)
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		f.kind, f.wire, err = kFixed32, protowire.Fixed32Type, ints(32)
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		f.kind, f.wire, err = kFixed64, protowire.Fixed64Type, ints(64)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f.kind, f.wire = kFloat, protowire.Fixed32Type
		if fd.Kind() == protoreflect.DoubleKind {
			f.kind, f.wire = kDouble, protowire.Fixed64Type
		}
		if t != nil && t.ID != arrowlite.FloatingPoint {
			err = mismatch()
		}
	case protoreflect.StringKind:
		f.kind, f.wire = kString, protowire.BytesType
		if t != nil && t.ID != arrowlite.Utf8 && t.ID != arrowlite.Binary {
			err = mismatch()
		}
	case protoreflect.BytesKind:
		f.kind, f.wire = kBytes, protowire.BytesType
		if t != nil && t.ID != arrowlite.Binary {
			err = mismatch()
		}
	case protoreflect.EnumKind:
		f.kind, f.wire = kEnum, protowire.VarintType
		f.enum = names(fd.Enum())
		switch {
		case t == nil || t.ID == arrowlite.Utf8:
		case t.ID == arrowlite.Int && t.Signed && t.BitWidth >= 32:
			f.toInt = true
		default:
			err = mismatch()
		}
	case protoreflect.MessageKind:
		f.wire = protowire.BytesType
		mt := fd.Message()
		switch {
		case isTimestamp(mt):
			f.kind = kTimestamp
			if t != nil && (t.ID != arrowlite.Timestamp || t.Unit != arrowlite.Microsecond) {
				err = fmt.Errorf("%s cannot be decoded into %s (a timestamp in microseconds)", mt.FullName(), t)
			}
		case t == nil:
			f.kind = kMessage
			f.msg = &message{}
		case t.ID == arrowlite.Struct:
			f.kind = kMessage
			f.msg, err = plan(mt, t.Children)
		default:
			err = fmt.Errorf("message %s cannot be decoded into %s", mt.FullName(), t)
		}
	default:
		err = fmt.Errorf("%s fields are not supported", fd.Kind())
	}
	if err != nil {
		return nil, err
	}
	if fd.Kind() != protoreflect.MessageKind && !fd.IsList() { // for map entries
		f.zero = constantOf(fd, fd.Default())
	}
	return f, nil
}

func names(ed protoreflect.EnumDescriptor) *enumNames {
	e := &enumNames{name: string(ed.Name())}
	vs := ed.Values()
	for i := 0; i < vs.Len(); i++ {
		v := vs.Get(i)
		n, s := int32(v.Number()), string(v.Name())
		switch {
		case n >= 0 && n < 1024:
			for int(n) >= len(e.dense) {
				e.dense = append(e.dense, "")
			}
			if e.dense[n] == "" { // aliases: the first name, as Java gives it
				e.dense[n] = s
			}
		default:
			if e.sparse == nil {
				e.sparse = map[int32]string{}
			}
			if _, ok := e.sparse[n]; !ok {
				e.sparse[n] = s
			}
		}
	}
	return e
}

// constantOf is v (a default) in the form fd's column takes.
func constantOf(fd protoreflect.FieldDescriptor, v protoreflect.Value) constant {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if v.Bool() {
			return constant{i: 1, f: 1}
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return constant{i: v.Int(), f: float64(v.Int())}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		i := int64(int32(uint32(v.Uint())))
		return constant{i: i, f: float64(i)}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		i := int64(v.Uint())
		return constant{i: i, f: float64(i)}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return constant{f: v.Float(), i: int64(math.Float64bits(v.Float()))}
	case protoreflect.StringKind:
		return constant{s: []byte(v.String())}
	case protoreflect.BytesKind:
		return constant{s: v.Bytes()}
	case protoreflect.EnumKind:
		n := int32(v.Enum())
		return constant{i: int64(n), s: []byte(names(fd.Enum()).lookup(n))}
	}
	return constant{}
}
