package decode

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/protodec"
)

// OptProtobufSource is the protobuf decoder's option that carries .proto
// source text (what a Pub/Sub schema of type PROTOCOL_BUFFER holds)
// instead of a descriptor set: compiled here, natively, so that the
// compiler stays out of the decoder's WebAssembly build.
const OptProtobufSource = "protobuf_source"

// protoSourceFile is the name the compiled source takes in the set.
const protoSourceFile = "pubsub_schema.proto"

// CompileProtoSource compiles .proto source text (it may import the
// well-known types, google/protobuf/*.proto, and nothing else) into a
// serialized FileDescriptorSet holding it and its imports, and lists the
// full names of the message types it defines (nested ones included).
func CompileProtoSource(source string) (descriptorSet []byte, messages []string, err error) {
	var errs []error
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{protoSourceFile: source}),
		}),
		Reporter: reporter.NewReporter(func(e reporter.ErrorWithPos) error {
			errs = append(errs, e)
			return nil // keep going: report every error at once
		}, nil),
	}
	files, err := c.Compile(context.Background(), protoSourceFile)
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("the .proto source does not compile: %w", errors.Join(errs...))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the .proto source does not compile: %w", err)
	}
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) { // imports first, each once
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := 0; i < fd.Imports().Len(); i++ {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(files[0])
	if descriptorSet, err = proto.Marshal(set); err != nil {
		return nil, nil, err
	}
	loaded, err := protodec.LoadDescriptorSet(descriptorSet)
	if err != nil {
		return nil, nil, err
	}
	fd, err := loaded.FindFileByPath(protoSourceFile)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range protodec.MessageNames(loaded) {
		if d, err := loaded.FindDescriptorByName(protoreflect.FullName(n)); err == nil && d.ParentFile() == fd {
			messages = append(messages, n)
		}
	}
	return descriptorSet, messages, nil
}

// withDescriptorSet returns the protobuf decoder's options with
// OptProtobufSource compiled into protodec.OptDescriptorSet.
func withDescriptorSet(opts map[string]string) (map[string]string, error) {
	src, ok := opts[OptProtobufSource]
	if !ok {
		return opts, nil
	}
	if _, both := opts[protodec.OptDescriptorSet]; both {
		return nil, fmt.Errorf("%w: give the message definition once: option %s or %s", ErrDecoder, OptProtobufSource, protodec.OptDescriptorSet)
	}
	set, _, err := CompileProtoSource(src)
	if err != nil {
		return nil, fmt.Errorf("%w: option %s: %v", ErrDecoder, OptProtobufSource, err)
	}
	out := maps.Clone(opts)
	delete(out, OptProtobufSource)
	out[protodec.OptDescriptorSet] = base64.StdEncoding.EncodeToString(set)
	return out, nil
}
