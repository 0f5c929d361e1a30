package decode

import (
	"encoding/base64"
	"fmt"
	"maps"

	"github.com/pubsub-go/pubsub-go/go/internal/protoschema"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/protodec"
)

// OptProtobufSource is the protobuf decoder's option that carries .proto
// source text (what a Pub/Sub schema of type PROTOCOL_BUFFER holds)
// instead of a descriptor set: compiled natively (protoschema), so that the
// compiler stays out of the decoder's WebAssembly build.
const OptProtobufSource = "protobuf_source"

// CompileProtoSource compiles .proto source text (it may import the
// well-known types, google/protobuf/*.proto, and nothing else) into a
// serialized FileDescriptorSet holding it and its imports, and lists the
// full names of the message types it defines (nested ones included).
func CompileProtoSource(source string) (descriptorSet []byte, messages []string, err error) {
	s, err := protoschema.Compile(source)
	if err != nil {
		return nil, nil, err
	}
	if descriptorSet, err = s.DescriptorSet(); err != nil {
		return nil, nil, err
	}
	return descriptorSet, s.MessageNames(), nil
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
