package main

import (
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// A request in Google's encoding, every field of PubsubMessage set on some
// message, reads back as the proto says: the topic, the message count and
// the data bytes, whole or split across gRPC buffers anywhere.
func TestPublishSummaryMatchesProto(t *testing.T) {
	req := &pubsubpb.PublishRequest{Topic: "projects/p/topics/t", Messages: []*pubsubpb.PubsubMessage{
		{Data: []byte("hello")},
		{},
		{Attributes: map[string]string{"a": "1", "b": "22"}, OrderingKey: "k"},
		{Data: make([]byte, 3000), MessageId: "x", PublishTime: timestamppb.Now(), Attributes: map[string]string{"c": ""}},
	}}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	want := publishSummary{topic: req.Topic, messages: 4, dataBytes: 5 + 3000}
	for cut := 0; cut <= len(b); cut += 97 {
		var s publishSummary
		data := mem.BufferSlice{mem.SliceBuffer(b[:cut]), mem.SliceBuffer(b[cut:])}
		if err := s.unmarshal(data); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if s != want {
			t.Fatalf("cut at %d: got %+v, want %+v", cut, s, want)
		}
	}
}

// Truncated or garbled bytes are an error, never a count.
func TestPublishSummaryRejectsMalformed(t *testing.T) {
	b, err := proto.Marshal(&pubsubpb.PublishRequest{Topic: "projects/p/topics/t",
		Messages: []*pubsubpb.PubsubMessage{{Data: []byte("hello")}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], b[:3], {0xff}, append([]byte{0x12, 0x02, 0x0a, 0x05}, b...)} {
		var s publishSummary
		if err := s.parse(bad); err == nil {
			t.Errorf("% x: no error, got %+v", bad, s)
		}
	}
}
