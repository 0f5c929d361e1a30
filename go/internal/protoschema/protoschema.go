// Package protoschema is the one .proto compiler of the library: it turns
// the source text of a Pub/Sub PROTOCOL_BUFFER schema into descriptors for
// the decoder (a descriptor set for protodec), the sink's encoder and the
// embedded emulator's validation, so that all three read a schema the
// same way. It runs natively only: the compiler stays out of the
// decoders' WebAssembly build, which takes descriptor sets.
package protoschema

import (
	"context"
	"errors"
	"fmt"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// FileName is the name the compiled source takes among its descriptors.
const FileName = "pubsub_schema.proto"

// Schema is a compiled .proto source.
type Schema struct {
	File protoreflect.FileDescriptor
}

// Compile compiles .proto source text; it may import the well-known types
// (google/protobuf/*.proto) and nothing else. Every error is reported at
// once.
func Compile(source string) (*Schema, error) {
	var errs []error
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{FileName: source}),
		}),
		Reporter: reporter.NewReporter(func(e reporter.ErrorWithPos) error {
			errs = append(errs, e)
			return nil // keep going: report every error at once
		}, nil),
	}
	files, err := c.Compile(context.Background(), FileName)
	if len(errs) > 0 {
		return nil, fmt.Errorf("the .proto source does not compile: %w", errors.Join(errs...))
	}
	if err != nil {
		return nil, fmt.Errorf("the .proto source does not compile: %w", err)
	}
	return &Schema{File: files[0]}, nil
}

// Message is the message type a Pub/Sub schema's messages are: the first
// top-level message the source defines (the service takes sources with
// exactly one; others are nested in it).
func (s *Schema) Message() (protoreflect.MessageDescriptor, error) {
	if s.File.Messages().Len() == 0 {
		return nil, fmt.Errorf("the .proto source defines no message")
	}
	return s.File.Messages().Get(0), nil
}

// MessageNames are the full names of the message types the source defines,
// nested ones included and map entries left out, in declaration order.
func (s *Schema) MessageNames() []string {
	var out []string
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			md := ms.Get(i)
			if md.IsMapEntry() {
				continue
			}
			out = append(out, string(md.FullName()))
			walk(md.Messages())
		}
	}
	walk(s.File.Messages())
	return out
}

// DescriptorSet is a serialized FileDescriptorSet holding the source and
// its imports, imports first, each once.
func (s *Schema) DescriptorSet() ([]byte, error) {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := 0; i < fd.Imports().Len(); i++ {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(s.File)
	return proto.Marshal(set)
}

// Validate checks data is one message of md in protobuf's binary encoding
// or, binary false, its JSON encoding.
func Validate(md protoreflect.MessageDescriptor, data []byte, binary bool) error {
	m := dynamicpb.NewMessage(md)
	if binary {
		return proto.Unmarshal(data, m)
	}
	return protojson.Unmarshal(data, m)
}
