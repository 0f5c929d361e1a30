package main

import (
	"errors"
	"math/bits"
	"sync"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// encodedMessage is a gRPC message already in wire format (see wire.go).
// Sending it hands its buffer to gRPC, which frees it once written.
type encodedMessage struct {
	buf mem.Buffer
}

// codec is gRPC's proto codec, except that it sends an *encodedMessage as
// it is and reads a *publishSummary (publish_wire.go), Acknowledge and
// ModifyAckDeadline requests (ack_wire.go) from wire bytes. Every other
// message goes through the proto codec.
type codec struct {
	encoding.CodecV2
}

func newCodec() codec {
	c := encoding.GetCodecV2(proto.Name)
	if c == nil {
		panic("loadserver: gRPC's proto codec is not registered")
	}
	return codec{c}
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *publishSummary:
		return m.unmarshal(data)
	case *pubsubpb.AcknowledgeRequest:
		return unmarshalAck(data, m)
	case *pubsubpb.ModifyAckDeadlineRequest:
		return unmarshalModack(data, m)
	}
	return c.CodecV2.Unmarshal(data, v)
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*encodedMessage)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	buf := m.buf
	m.buf = nil // gRPC owns it now
	if buf == nil {
		return nil, errors.New("loadserver: encoded message sent twice")
	}
	return mem.BufferSlice{buf}, nil
}

// bufferPool recycles response buffers once gRPC has written them out.
// Unlike gRPC's default pool it does not zero them: the encoder writes
// every byte.
type bufferPool struct {
	p sync.Pool
}

func (bp *bufferPool) Get(n int) *[]byte {
	if b, ok := bp.p.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	// A buffer too small is dropped, so the pool converges on the largest
	// size in use; capacities are powers of two so that batches growing a
	// little at a time do not allocate each time.
	b := make([]byte, n, 1<<bits.Len(uint(max(n, 1)-1)))
	return &b
}

func (bp *bufferPool) Put(b *[]byte) {
	bp.p.Put(b)
}
