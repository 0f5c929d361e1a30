package main

import (
	"bytes"
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// decodeResponse sends m through the server's codec, as gRPC does, and
// decodes the bytes with the standard proto unmarshal, as clients do.
func decodeResponse(t *testing.T, m *encodedMessage) *pubsubpb.StreamingPullResponse {
	t.Helper()
	data, err := newCodec().Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free()
	resp := &pubsubpb.StreamingPullResponse{}
	if err := proto.Unmarshal(data.Materialize(), resp); err != nil {
		t.Fatalf("standard unmarshal of the encoded response: %v", err)
	}
	return resp
}

func TestEncodedResponseDecodes(t *testing.T) {
	// Publish times with zero nanos, zero seconds and neither; message
	// numbers and attempts whose varints take several bytes.
	now := time.Unix(1_700_000_123, 456_789_012)
	ps := []pending{{msg: 0, attempt: 1}, {msg: 41, attempt: 2}, {msg: 1 << 40, attempt: 300}, {msg: 7, attempt: 1 << 30}}
	for _, c := range []struct {
		name                 string
		payload, attrs, keys int
		ordering             bool
		lease, first         uint64
		now                  time.Time
	}{
		{"1KiB-2attrs", 1024, 2, 0, false, 1, 1, now},
		{"ordering-keys", 100, 3, 3, true, 1 << 50, 1<<63 + 5, now.Truncate(time.Second)},
		{"empty-payload", 0, 0, 0, false, 36, 35, time.Unix(0, 5)},
		{"large-payload", 200_000, 1, 2, true, 2, 1000, now},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSynth(c.payload, c.attrs, c.keys, false)
			props := &pubsubpb.StreamingPullResponse_SubscriptionProperties{MessageOrderingEnabled: c.ordering}
			e := newResponseEncoder(s, props, &bufferPool{})
			// Twice, so the second batch reuses the encoder's scratch.
			for round := range 2 {
				first := c.first + uint64(round*len(ps))
				resp := decodeResponse(t, e.encode(ps, c.lease, first, c.now))

				if !proto.Equal(resp.SubscriptionProperties, props) {
					t.Fatalf("subscription_properties = %v, want %v", resp.SubscriptionProperties, props)
				}
				if len(resp.ReceivedMessages) != len(ps) {
					t.Fatalf("%d messages, want %d", len(resp.ReceivedMessages), len(ps))
				}
				for i, rm := range resp.ReceivedMessages {
					p := ps[i]
					if l, seq, ok := parseAckID(rm.AckId); !ok || l != c.lease || seq != first+uint64(i) {
						t.Errorf("message %d: ack id %q = lease %d seq %d (%v), want %d, %d", i, rm.AckId, l, seq, ok, c.lease, first+uint64(i))
					}
					if rm.DeliveryAttempt != p.attempt {
						t.Errorf("message %d: delivery_attempt %d, want %d", i, rm.DeliveryAttempt, p.attempt)
					}
					m := rm.Message
					if want := strconv.FormatUint(p.msg+1, 10); m.MessageId != want {
						t.Errorf("message %d: message_id %q, want %q", i, m.MessageId, want)
					}
					if !bytes.Equal(m.Data, s.payload) {
						t.Errorf("message %d: data differs (%d bytes, want %d)", i, len(m.Data), len(s.payload))
					}
					if len(m.Attributes) != c.attrs || !maps.Equal(m.Attributes, s.attrs) {
						t.Errorf("message %d: attributes %v, want %v", i, m.Attributes, s.attrs)
					}
					if got := m.PublishTime.AsTime(); m.PublishTime == nil || !got.Equal(c.now) {
						t.Errorf("message %d: publish_time %v, want %v", i, got, c.now)
					}
					if want := s.orderingKey(p.msg); m.OrderingKey != want {
						t.Errorf("message %d: ordering_key %q, want %q", i, m.OrderingKey, want)
					}
				}

				// And the whole of it is what the proto structs of unary
				// Pull (and the server before wire.go) marshal.
				rms := s.newReceived(len(ps))
				s.fill(rms, ps, c.lease, first, timestamppb.New(c.now), &idScratch{})
				want := &pubsubpb.StreamingPullResponse{ReceivedMessages: rms, SubscriptionProperties: props}
				if !proto.Equal(resp, want) {
					t.Fatalf("decoded response differs from the proto-built one")
				}
			}
		})
	}
}

func TestEncodedPerMessagePublishTime(t *testing.T) {
	// --rate: each message carries its own publish time, of varying encoded
	// length (zero nanos, whole seconds), and the sizes still add up.
	sub := newSubscription(&pubsubpb.Subscription{Name: "projects/p/subscriptions/s"}, 0)
	sub.rate, sub.born = 4, time.Unix(1_700_000_000, 0) // message n at born + (n+1)/4 s
	e := newResponseEncoder(newSynth(100, 2, 0, false), sub.props, &bufferPool{})
	e.at = sub.availableAt
	ps := []pending{{msg: 0, attempt: 1}, {msg: 3, attempt: 1}, {msg: 1, attempt: 2}, {msg: 1 << 20, attempt: 1}}
	for round := range 2 { // the second reuses the encoder's scratch
		resp := decodeResponse(t, e.encode(ps, 1, uint64(round*len(ps)), time.Unix(1, 0)))
		if len(resp.ReceivedMessages) != len(ps) {
			t.Fatalf("%d messages, want %d", len(resp.ReceivedMessages), len(ps))
		}
		for i, rm := range resp.ReceivedMessages {
			want := sub.availableAt(ps[i].msg)
			if got := rm.Message.PublishTime.AsTime(); !got.Equal(want) {
				t.Fatalf("message %d publish_time = %v, want %v", ps[i].msg, got, want)
			}
		}
	}
}

func TestEncodedEmptyResponse(t *testing.T) {
	props := &pubsubpb.StreamingPullResponse_SubscriptionProperties{}
	e := newResponseEncoder(newSynth(10, 1, 0, false), props, &bufferPool{})
	resp := decodeResponse(t, e.encode(nil, 1, 0, time.Now()))
	// The heartbeat: no messages, and the (empty) properties present.
	if len(resp.ReceivedMessages) != 0 || resp.SubscriptionProperties == nil {
		t.Fatalf("heartbeat = %v", resp)
	}
}

// TestStreamingPullWireFormat checks the encoded path end to end: gRPC's
// generated client decodes what the server sent.
func TestStreamingPullWireFormat(t *testing.T) {
	in := startServer(t, func(o *options) { o.attributes, o.orderingKeys, o.payloadBytes = 2, 3, 2000 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc, err := rawSubscriber(t, in.addr).StreamingPull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Millisecond)
	if err := sc.Send(&pubsubpb.StreamingPullRequest{Subscription: testSub, MaxOutstandingMessages: 4, StreamAckDeadlineSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	resp, err := sc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetSubscriptionProperties().GetMessageOrderingEnabled() {
		t.Errorf("subscription_properties = %v, want ordering enabled", resp.SubscriptionProperties)
	}
	if len(resp.ReceivedMessages) == 0 {
		t.Fatal("no messages")
	}
	for i, rm := range resp.ReceivedMessages {
		m := rm.Message
		_, seq, ok := parseAckID(rm.AckId)
		pt := m.PublishTime.AsTime()
		if !ok || seq != uint64(i+1) || m.MessageId != strconv.Itoa(i+1) || rm.DeliveryAttempt != 1 ||
			!bytes.Equal(m.Data, in.synth.payload) || !maps.Equal(m.Attributes, in.synth.attrs) ||
			m.OrderingKey != in.synth.orderingKey(uint64(i)) || pt.Before(before) || pt.After(time.Now()) {
			t.Errorf("message %d: ack id %q, id %q, attempt %d, %d data bytes, attributes %v, key %q, published %v",
				i, rm.AckId, m.MessageId, rm.DeliveryAttempt, len(m.Data), m.Attributes, m.OrderingKey, pt)
		}
	}
}

func TestCodecMarshal(t *testing.T) {
	c := newCodec()
	m := &encodedMessage{buf: mem.SliceBuffer("abc")}
	data, err := c.Marshal(m)
	if err != nil || string(data.Materialize()) != "abc" {
		t.Fatalf("Marshal(encoded) = %q, %v", data.Materialize(), err)
	}
	if _, err := c.Marshal(m); err == nil {
		t.Fatal("an encoded message marshalled twice")
	}
	// Everything else is the proto codec's.
	sub := &pubsubpb.Subscription{Name: testSub, AckDeadlineSeconds: 10}
	data, err = c.Marshal(sub)
	if err != nil {
		t.Fatal(err)
	}
	got := &pubsubpb.Subscription{}
	if err := c.Unmarshal(data, got); err != nil || !proto.Equal(got, sub) {
		t.Fatalf("round trip = %v, %v", got, err)
	}
}
