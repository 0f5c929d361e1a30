package publisher

import (
	"bytes"
	"unsafe"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	// Registers the "proto" codec that publishCodec delegates to.
	_ "google.golang.org/grpc/encoding/proto"
)

// request is the PublishRequest carrying b's messages. They go in as the
// message's unknown fields, which protobuf writes out verbatim after the
// topic, so the request encodes as the topic plus b's entries, and it
// still travels through the generated client (its routing header, its
// credentials) like any other.
func (b *bundle) request(topic string) *pubsubpb.PublishRequest {
	req := &pubsubpb.PublishRequest{Topic: topic}
	var within []byte
	if len(b.chunks) == 1 {
		within = b.chunks[0].buf
	}
	req.ProtoReflect().SetUnknown(protoreflect.RawFields(joinEntries(b.msgs, within)))
	return req
}

// joinEntries is the entries back to back. Entries of one Publish call lie
// back to back in that call's chunk already, and a bundle is usually made
// of them: when all lie back to back in within (the one chunk's buffer
// they came from), that span of within is returned, not copied. Addresses
// are compared as numbers: a pointer just past an entry may lie outside
// any allocation, which the Go runtime does not allow a pointer to do.
func joinEntries(entries [][]byte, within []byte) []byte {
	if len(entries) == 0 {
		return nil
	}
	n := 0
	for _, e := range entries {
		n += len(e)
	}
	if off, ok := spanIn(entries, within, n); ok {
		return within[off : off+n : off+n]
	}
	out := make([]byte, 0, n)
	for _, e := range entries {
		out = append(out, e...)
	}
	return out
}

// spanIn reports where in within the entries lie back to back, n bytes in
// all, if they do.
func spanIn(entries [][]byte, within []byte, n int) (int, bool) {
	if len(within) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(within)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(entries[0])))
	if start < base || start-base+uintptr(n) > uintptr(len(within)) {
		return 0, false
	}
	next := start
	for _, e := range entries {
		if uintptr(unsafe.Pointer(unsafe.SliceData(e))) != next {
			return 0, false
		}
		next += uintptr(len(e))
	}
	return int(start - base), true
}

// publishCodec hands gRPC a request made by bundle.request as two buffers,
// the topic field and the entries where they lie, instead of marshalling
// it into one new buffer: that was a second copy of every payload (gRPC's
// writer copies the buffers into HTTP/2 frames either way). Anything else
// is protobuf as usual. With b, the request's bundle, the entries are held
// from reuse (bundle.hold) until gRPC frees them, which may be after the
// call returned (its writer copies them out in its own time).
type publishCodec struct{ b *bundle }

var protoCodec = encoding.GetCodecV2("proto")

func (c publishCodec) Marshal(v any) (mem.BufferSlice, error) {
	req, ok := v.(*pubsubpb.PublishRequest)
	if !ok || len(req.Messages) > 0 {
		return protoCodec.Marshal(v)
	}
	head := protowire.AppendTag(nil, fieldRequestTopic, protowire.BytesType)
	head = protowire.AppendString(head, req.Topic)
	entries := []byte(req.ProtoReflect().GetUnknown())
	var body mem.Buffer
	switch {
	case c.b == nil:
		body = mem.SliceBuffer(entries)
	case mem.IsBelowBufferPoolingThreshold(cap(entries)):
		// gRPC would not report freeing so small a buffer: it gets a copy.
		body = mem.SliceBuffer(bytes.Clone(entries))
	default:
		c.b.hold()
		body = mem.NewBuffer(&entries, bundleFree{c.b})
	}
	return mem.BufferSlice{mem.SliceBuffer(head), body}, nil
}

// bundleFree is the mem.BufferPool of a bundle's entries handed to gRPC:
// the buffer "returned" is the end of a hold.
type bundleFree struct{ b *bundle }

func (f bundleFree) Get(n int) *[]byte {
	buf := make([]byte, n)
	return &buf
}

func (f bundleFree) Put(*[]byte) { f.b.drop() }

// Unmarshal leaves a PublishResponse empty: the publisher needs only the
// call's status, and decoding the message ids made a string per message.
func (publishCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if _, ok := v.(*pubsubpb.PublishResponse); ok {
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

// Name keeps the standard content-subtype: to the server this is plain
// gRPC protobuf.
func (publishCodec) Name() string { return "proto" }
