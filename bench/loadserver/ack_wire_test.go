package main

import (
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Requests in Google's encoding read back as proto.Unmarshal reads them,
// whole or split across gRPC buffers anywhere, and the ids stay intact
// once gRPC's buffers are reused.
func TestAckRequestsMatchProto(t *testing.T) {
	ids := []string{"1-abc", "", "2-zz9", string(make([]byte, 300))}
	ack := &pubsubpb.AcknowledgeRequest{Subscription: "projects/p/subscriptions/s", AckIds: ids}
	modack := &pubsubpb.ModifyAckDeadlineRequest{Subscription: "projects/p/subscriptions/s", AckIds: ids, AckDeadlineSeconds: 37}
	c := newCodec()
	for _, want := range []proto.Message{ack, modack, &pubsubpb.AcknowledgeRequest{}, &pubsubpb.ModifyAckDeadlineRequest{}} {
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		for cut := 0; cut <= len(b); cut += 23 {
			first, second := append([]byte(nil), b[:cut]...), append([]byte(nil), b[cut:]...)
			got := want.ProtoReflect().New().Interface()
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(first), mem.SliceBuffer(second)}, got); err != nil {
				t.Fatalf("%T cut at %d: %v", want, cut, err)
			}
			clear(first) // gRPC reuses its buffers once Unmarshal returns
			clear(second)
			if !proto.Equal(got, want) {
				t.Fatalf("%T cut at %d: got %v, want %v", want, cut, got, want)
			}
		}
	}
}

// Truncated or garbled bytes are an error, never a partial list of ids.
func TestAckRequestsRejectMalformed(t *testing.T) {
	b, err := proto.Marshal(&pubsubpb.ModifyAckDeadlineRequest{Subscription: "s", AckIds: []string{"1-a", "1-b"}, AckDeadlineSeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	c := newCodec()
	for _, bad := range [][]byte{b[:len(b)-1], b[:2], {0xff}, {0x22, 0x05, 'x'}} {
		var req pubsubpb.ModifyAckDeadlineRequest
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &req); err == nil {
			t.Errorf("% x: no error, got %v", bad, &req)
		}
	}
}
