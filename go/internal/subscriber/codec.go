package subscriber

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	// Registers the "proto" codec that pullCodec delegates to.
	_ "google.golang.org/grpc/encoding/proto"
)

// pullCodec lets a StreamingPull stream receive each response as its
// encoded bytes (decoded by package wire straight into Arrow) while
// requests are marshalled as protobuf as usual. Receiving into anything but
// a *rawResponse falls back to protobuf.
type pullCodec struct{}

var protoCodec = encoding.GetCodecV2("proto")

// rawResponse is an encoded StreamingPullResponse. Its buffer is reused
// from one response to the next.
type rawResponse struct {
	b []byte
}

func (pullCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (pullCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*rawResponse)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	n := data.Len()
	if cap(r.b) < n {
		r.b = make([]byte, n)
	}
	r.b = r.b[:n]
	data.CopyTo(r.b)
	return nil
}

// Name keeps the standard content-subtype: to the server this is plain
// gRPC protobuf.
func (pullCodec) Name() string { return "proto" }
