// Package protodec decodes Protocol Buffers payloads into Arrow columns
// the way Spark's from_protobuf does with its default options: the plan
// is compiled once from the message descriptor and the target schema,
// then each payload is one walk over its wire bytes (protowire), with no
// message object per payload. The JSON encoding (protobuf's canonical
// JSON mapping) goes through protojson and dynamicpb into the same walk.
package protodec

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// The decoder's options (sdk.Config.Options).
const (
	// OptDescriptorSet is a serialized google.protobuf.FileDescriptorSet,
	// base64 (standard alphabet): the message type and its imports (the
	// well-known types may be left out: they are built in).
	OptDescriptorSet = "protobuf_descriptor_set"
	// OptMessage is the message type's full name (package.Message); a
	// name without a package is accepted when one message has it.
	OptMessage = "protobuf_message"
	// OptEncoding is "binary" (the default) or "json".
	OptEncoding = "protobuf_encoding"
	// OptRecursiveDepth is Spark's recursive.fields.max.depth: how many
	// times a message type may recur in the derived schema (1..10);
	// without it a recursive type is refused.
	OptRecursiveDepth = "protobuf_recursive_depth"
)

// TwoPassOnly makes d decode every payload in two passes, as it does those
// its one pass gives up on (onepass.go); for tests that compare the two.
func (d *Decoder) TwoPassOnly() { d.w.twoPassOnly = true }

// Encodings are the values OptEncoding takes.
var Encodings = []string{"binary", "json"}

// Decoder decodes one payload into one row; it implements sdk.Decoder.
type Decoder struct {
	root *message
	w    walker

	// JSON encoding only.
	json    bool
	md      protoreflect.MessageDescriptor
	jsonOpt protojson.UnmarshalOptions
	bin     []byte
}

// New is the sdk.Factory of the protobuf decoder.
func New(cfg sdk.Config) (sdk.Decoder, *arrowlite.Schema, error) {
	var set, name, encoding, depth string
	for k, v := range cfg.Options {
		switch k {
		case OptDescriptorSet:
			set = v
		case OptMessage:
			name = v
		case OptEncoding:
			encoding = v
		case OptRecursiveDepth:
			depth = v
		default:
			return nil, nil, fmt.Errorf("protobuf decoder: unknown option %q (options: %s, %s, %s, %s)",
				k, OptDescriptorSet, OptMessage, OptEncoding, OptRecursiveDepth)
		}
	}
	if set == "" {
		return nil, nil, fmt.Errorf("protobuf decoder: option %s is required: a serialized FileDescriptorSet, base64", OptDescriptorSet)
	}
	if name == "" {
		return nil, nil, fmt.Errorf("protobuf decoder: option %s is required: the message type's full name, e.g. mypackage.Event", OptMessage)
	}
	switch encoding {
	case "", "binary", "json":
	default:
		return nil, nil, fmt.Errorf("protobuf decoder: option %s=%q is not one of %s", OptEncoding, encoding, strings.Join(Encodings, ", "))
	}
	maxDepth := -1
	if depth != "" {
		n, err := strconv.Atoi(depth)
		if err != nil || n < 1 || n > 10 {
			return nil, nil, fmt.Errorf("protobuf decoder: option %s=%q must be an integer from 1 to 10", OptRecursiveDepth, depth)
		}
		maxDepth = n
	}
	raw, err := base64.StdEncoding.DecodeString(set)
	if err != nil {
		return nil, nil, fmt.Errorf("protobuf decoder: option %s is not base64: %v", OptDescriptorSet, err)
	}
	files, err := LoadDescriptorSet(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("protobuf decoder: %w", err)
	}
	md, err := FindMessage(files, name)
	if err != nil {
		return nil, nil, fmt.Errorf("protobuf decoder: %w", err)
	}
	schema := cfg.Schema
	if schema == nil {
		fields, err := SQLFields(md, maxDepth)
		if err != nil {
			return nil, nil, fmt.Errorf("protobuf decoder: %w", err)
		}
		schema = &arrowlite.Schema{Fields: fields}
	}
	root, err := plan(md, schema.Fields)
	if err != nil {
		return nil, nil, fmt.Errorf("protobuf decoder: %w", err)
	}
	d := &Decoder{root: root}
	if encoding == "json" {
		d.json, d.md = true, md
		d.jsonOpt = protojson.UnmarshalOptions{Resolver: dynamicpb.NewTypes(files)}
	}
	return d, schema, nil
}

// Decode implements sdk.Decoder.
func (d *Decoder) Decode(payload []byte, cols []*arrowlite.Builder) error {
	if d.json {
		// Correctness over speed: protojson knows the canonical mapping
		// (names, int64 as strings, well-known types); its binary form
		// then takes the same walk as a binary payload.
		m := dynamicpb.NewMessage(d.md)
		if payload == nil {
			payload = []byte("{}") // a null payload is an empty message, as in binary
		}
		if err := d.jsonOpt.Unmarshal(payload, m); err != nil {
			return fmt.Errorf("protobuf JSON: %v", err)
		}
		var err error
		if d.bin, err = (proto.MarshalOptions{}).MarshalAppend(d.bin[:0], m); err != nil {
			return fmt.Errorf("protobuf JSON: %v", err)
		}
		payload = d.bin
	}
	return d.w.row(d.root, payload, cols)
}
