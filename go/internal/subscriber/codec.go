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

// rawResponse is an encoded StreamingPullResponse as gRPC received it: the
// buffers of its HTTP/2 data frames, parsed where they are
// (wire.Response.ParseSegments) rather than joined into one slice first.
// The receiver holds a reference to them until release.
type rawResponse struct {
	data mem.BufferSlice
	segs [][]byte // data's bytes, reused from one response to the next
}

func (pullCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (pullCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*rawResponse)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	r.release()
	// gRPC frees data once Unmarshal returns; the reference keeps the
	// buffers (and the views wire makes of them) valid until release.
	data.Ref()
	r.data = data
	for _, b := range data {
		r.segs = append(r.segs, b.ReadOnlyData())
	}
	return nil
}

// size is the response's encoded size.
func (r *rawResponse) size() int64 {
	var n int
	for _, b := range r.segs {
		n += len(b)
	}
	return int64(n)
}

// release returns the response's buffers to gRPC's pool; views of them
// must not be used after it.
func (r *rawResponse) release() {
	if r.data != nil {
		r.data.Free()
		r.data = nil
	}
	clear(r.segs)
	r.segs = r.segs[:0]
}

// Name keeps the standard content-subtype: to the server this is plain
// gRPC protobuf.
func (pullCodec) Name() string { return "proto" }
