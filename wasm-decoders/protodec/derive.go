package protodec

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// SQLFields are the Arrow forms of the Spark fields that from_protobuf's
// SchemaConverters.toSqlType gives md with its default options: enums as
// their names, unsigned integers in the signed type of their width,
// wrappers as structs of their value, google.protobuf.Timestamp (any
// message named Timestamp with fields seconds, nanos) as TIMESTAMP, a
// recursive type refused unless maxDepth (recursive.fields.max.depth,
// -1 unset) bounds it, a field whose message type is left with no fields
// dropped.
func SQLFields(md protoreflect.MessageDescriptor, maxDepth int) ([]arrowlite.Field, error) {
	return sqlFields(md, map[protoreflect.FullName]int{md.FullName(): 1}, maxDepth)
}

func sqlFields(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]int, maxDepth int) ([]arrowlite.Field, error) {
	var out []arrowlite.Field
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		t, err := sqlType(fd, seen, maxDepth)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fd.Name(), err)
		}
		if t == nil {
			continue // dropped at the recursion bound
		}
		f := arrowlite.Field{Name: string(fd.Name()), Nullable: fd.Cardinality() != protoreflect.Required, Type: t}
		if fd.IsList() {
			f = arrowlite.Field{Name: f.Name, Nullable: true,
				Type: arrowlite.ListType(arrowlite.Field{Name: "element", Nullable: false, Type: t})}
		} else if fd.IsMap() {
			f.Nullable = true
		}
		out = append(out, f)
	}
	return out, nil
}

// sqlType is the element type of fd (the item type of a repeated field),
// nil when Spark drops the field.
func sqlType(fd protoreflect.FieldDescriptor, seen map[protoreflect.FullName]int, maxDepth int) (*arrowlite.DataType, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return arrowlite.BoolType(), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return arrowlite.IntType(32, true), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return arrowlite.IntType(64, true), nil
	case protoreflect.FloatKind:
		return arrowlite.Float32Type(), nil
	case protoreflect.DoubleKind:
		return arrowlite.Float64Type(), nil
	case protoreflect.StringKind, protoreflect.EnumKind:
		return arrowlite.Utf8Type(), nil
	case protoreflect.BytesKind:
		return arrowlite.BinaryType(), nil
	case protoreflect.GroupKind:
		return nil, fmt.Errorf("group fields are not supported")
	}
	// A message.
	mt := fd.Message()
	switch {
	case isTimestamp(mt):
		return arrowlite.TimestampType(arrowlite.Microsecond, "UTC"), nil
	case isDuration(mt):
		return nil, fmt.Errorf("%s is not supported (Spark reads it as an INTERVAL DAY TO SECOND, which Arrow batches here do not carry)", mt.FullName())
	case fd.IsMap():
		kt, err := sqlType(fd.MapKey(), seen, maxDepth)
		if err != nil {
			return nil, err
		}
		vt, err := sqlType(fd.MapValue(), seen, maxDepth)
		if err != nil || vt == nil {
			return nil, err
		}
		return arrowlite.MapType(kt, arrowlite.Field{Nullable: false, Type: vt}), nil
	}
	name := mt.FullName()
	depth, recursive := seen[name]
	if recursive && maxDepth <= 0 {
		return nil, fmt.Errorf("message %s is recursive; set option recursive depth (Spark's recursive.fields.max.depth, 1 to 10) "+
			"to keep that many levels, or give a schema", name)
	}
	if recursive && depth >= maxDepth {
		return nil, nil
	}
	inner := make(map[protoreflect.FullName]int, len(seen)+1)
	for k, v := range seen {
		inner[k] = v
	}
	inner[name] = depth + 1
	fields, err := sqlFields(mt, inner, maxDepth)
	if err != nil || len(fields) == 0 {
		return nil, err
	}
	return arrowlite.StructType(fields...), nil
}

// isTimestamp is Spark's test for a timestamp message (by shape, not by
// full name).
func isTimestamp(md protoreflect.MessageDescriptor) bool { return secondsNanos(md, "Timestamp") }

func isDuration(md protoreflect.MessageDescriptor) bool { return secondsNanos(md, "Duration") }

func secondsNanos(md protoreflect.MessageDescriptor, name string) bool {
	f := md.Fields()
	return string(md.Name()) == name && f.Len() == 2 && f.Get(0).Name() == "seconds" && f.Get(1).Name() == "nanos"
}
