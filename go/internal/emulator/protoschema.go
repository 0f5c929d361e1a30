package emulator

import (
	"context"
	"errors"
	"fmt"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// protoSchemaFile is the name the schema's .proto source compiles under.
const protoSchemaFile = "pubsub_schema.proto"

// compileProtoSchema compiles a protocol buffer schema definition and
// returns its message type: the service takes exactly one top-level
// message (others may be nested in it).
func compileProtoSchema(def string) (protoreflect.MessageDescriptor, error) {
	var errs []error
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{protoSchemaFile: def}),
		}),
		Reporter: reporter.NewReporter(func(e reporter.ErrorWithPos) error {
			errs = append(errs, e)
			return nil
		}, nil),
	}
	files, err := c.Compile(context.Background(), protoSchemaFile)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err != nil {
		return nil, err
	}
	msgs := files[0].Messages()
	if msgs.Len() != 1 {
		return nil, fmt.Errorf("a protocol buffer schema defines exactly one top-level message, this one %d", msgs.Len())
	}
	return msgs.Get(0), nil
}

// validProto checks data is one message of md in the given encoding.
func validProto(md protoreflect.MessageDescriptor, data []byte, binary bool) error {
	m := dynamicpb.NewMessage(md)
	if binary {
		return proto.Unmarshal(data, m)
	}
	return protojson.Unmarshal(data, m)
}
