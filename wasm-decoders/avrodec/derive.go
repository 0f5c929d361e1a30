package avrodec

import (
	"fmt"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// sqlType maps an Avro schema to the Arrow form of the Spark type that
// SchemaConverters.toSqlType gives it, and whether it is nullable.
func sqlType(n *node) (*arrowlite.DataType, bool, error) {
	switch n.Kind {
	case aNull:
		return arrowlite.NullType(), true, nil
	case aBool:
		return arrowlite.BoolType(), false, nil
	case aInt:
		if n.Logical == "date" {
			return arrowlite.Date32Type(), false, nil
		}
		return arrowlite.IntType(32, true), false, nil
	case aLong:
		switch n.Logical {
		case "timestamp-millis", "timestamp-micros", "timestamp-nanos":
			return arrowlite.TimestampType(arrowlite.Microsecond, "UTC"), false, nil
		case "local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos":
			return arrowlite.TimestampType(arrowlite.Microsecond, ""), false, nil
		}
		return arrowlite.IntType(64, true), false, nil
	case aFloat:
		return arrowlite.Float32Type(), false, nil
	case aDouble:
		return arrowlite.Float64Type(), false, nil
	case aBytes, aFixed:
		if n.Logical == "decimal" {
			if n.Precision > 38 {
				return nil, false, fmt.Errorf("decimal precision %d exceeds 38", n.Precision)
			}
			return arrowlite.DecimalType(int32(n.Precision), int32(n.Scale)), false, nil
		}
		return arrowlite.BinaryType(), false, nil
	case aString, aEnum:
		return arrowlite.Utf8Type(), false, nil
	case aRecord:
		fields, err := sqlFields(n)
		if err != nil {
			return nil, false, err
		}
		return arrowlite.StructType(fields...), false, nil
	case aArray:
		t, null, err := sqlType(n.Items)
		if err != nil {
			return nil, false, err
		}
		return arrowlite.ListType(arrowlite.Field{Name: "element", Nullable: null, Type: t}), false, nil
	case aMap:
		t, null, err := sqlType(n.Items)
		if err != nil {
			return nil, false, err
		}
		return arrowlite.MapType(arrowlite.Utf8Type(), arrowlite.Field{Nullable: null, Type: t}), false, nil
	case aUnion:
		rest, hasNull := nonNull(n)
		switch {
		case len(rest) == 0:
			return arrowlite.NullType(), true, nil
		case len(rest) == 1:
			t, null, err := sqlType(rest[0])
			return t, null || hasNull, err
		case len(rest) == 2 && kinds(rest, aInt, aLong):
			return arrowlite.IntType(64, true), hasNull, nil
		case len(rest) == 2 && kinds(rest, aFloat, aDouble):
			return arrowlite.Float64Type(), hasNull, nil
		}
		var members []arrowlite.Field
		for i, b := range rest {
			t, _, err := sqlType(b)
			if err != nil {
				return nil, false, err
			}
			members = append(members, arrowlite.Field{Name: fmt.Sprintf("member%d", i), Nullable: true, Type: t})
		}
		return arrowlite.StructType(members...), hasNull, nil
	}
	return nil, false, fmt.Errorf("unsupported avro type")
}

func sqlFields(n *node) ([]arrowlite.Field, error) {
	var out []arrowlite.Field
	for _, f := range n.Fields {
		t, null, err := sqlType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		out = append(out, arrowlite.Field{Name: f.Name, Nullable: null, Type: t})
	}
	return out, nil
}

// nonNull returns the non-null branches of a union and whether it had null.
func nonNull(u *node) ([]*node, bool) {
	var rest []*node
	hasNull := false
	for _, b := range u.Branches {
		if b.Kind == aNull {
			hasNull = true
		} else {
			rest = append(rest, b)
		}
	}
	return rest, hasNull
}

// kinds reports whether the two branches are exactly a and b in any order
// (logical types aside, as in Spark).
func kinds(bs []*node, a, b akind) bool {
	return (bs[0].Kind == a && bs[1].Kind == b) || (bs[0].Kind == b && bs[1].Kind == a)
}
