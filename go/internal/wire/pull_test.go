package wire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// check compares a parsed response with what google.golang.org/protobuf
// decodes from the same bytes.
func check(t *testing.T, b []byte, r *Response) {
	t.Helper()
	var want pb.StreamingPullResponse
	if err := proto.Unmarshal(b, &want); err != nil {
		t.Fatalf("proto.Unmarshal: %v", err)
	}
	if err := r.Parse(b); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(r.Messages) != len(want.ReceivedMessages) {
		t.Fatalf("%d messages, want %d", len(r.Messages), len(want.ReceivedMessages))
	}
	for i, w := range want.ReceivedMessages {
		m := &r.Messages[i]
		wm := w.GetMessage()
		eq := func(field string, got []byte, want string) {
			if string(got) != want {
				t.Errorf("message %d %s = %q, want %q", i, field, got, want)
			}
		}
		eq("ack_id", m.AckID, w.GetAckId())
		eq("message_id", m.MessageID, wm.GetMessageId())
		eq("data", m.Data, string(wm.GetData()))
		eq("ordering_key", m.OrderingKey, wm.GetOrderingKey())
		if m.DeliveryAttempt != w.GetDeliveryAttempt() {
			t.Errorf("message %d delivery_attempt = %d, want %d", i, m.DeliveryAttempt, w.GetDeliveryAttempt())
		}
		if pt := wm.GetPublishTime(); (pt != nil) != m.HasPublishTime || m.PublishSeconds != pt.GetSeconds() || m.PublishNanos != pt.GetNanos() {
			t.Errorf("message %d publish_time = %v %d.%d, want %v", i, m.HasPublishTime, m.PublishSeconds, m.PublishNanos, pt)
		}
		keys := make([]string, 0, len(wm.GetAttributes()))
		for k := range wm.GetAttributes() {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) != len(m.Attributes) {
			t.Fatalf("message %d: %d attributes, want %d", i, len(m.Attributes), len(keys))
		}
		for j, k := range keys {
			eq(fmt.Sprintf("attribute key %d", j), m.Attributes[j].Key, k)
			eq("attribute "+k, m.Attributes[j].Value, wm.GetAttributes()[k])
		}
		if got, want := m.Size(), int64(len(wm.GetData())+len(wm.GetMessageId())+len(wm.GetOrderingKey())+len(w.GetAckId())+attrBytes(wm)); got != want {
			t.Errorf("message %d size = %d, want %d", i, got, want)
		}
	}
}

func attrBytes(m *pb.PubsubMessage) int {
	n := 0
	for k, v := range m.GetAttributes() {
		n += len(k) + len(v)
	}
	return n
}

func randomResponse(rng *rand.Rand) *pb.StreamingPullResponse {
	str := func(max int) string {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	resp := &pb.StreamingPullResponse{}
	if rng.IntN(2) == 0 {
		resp.SubscriptionProperties = &pb.StreamingPullResponse_SubscriptionProperties{ExactlyOnceDeliveryEnabled: true}
	}
	for range rng.IntN(20) {
		m := &pb.PubsubMessage{MessageId: str(20), OrderingKey: str(3)}
		if rng.IntN(4) > 0 {
			m.Data = []byte(str(300))
		}
		if rng.IntN(3) > 0 {
			m.PublishTime = &timestamppb.Timestamp{Seconds: rng.Int64N(1 << 40), Nanos: rng.Int32N(1e9)}
		}
		if n := rng.IntN(6); n > 0 {
			m.Attributes = map[string]string{}
			for range n {
				m.Attributes[str(4)] = str(10)
			}
		}
		resp.ReceivedMessages = append(resp.ReceivedMessages, &pb.ReceivedMessage{
			AckId: str(160), Message: m, DeliveryAttempt: rng.Int32N(3)})
	}
	return resp
}

func TestParseMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r Response // reused on purpose: nothing may leak between responses
	for range 500 {
		b, err := proto.Marshal(randomResponse(rng))
		if err != nil {
			t.Fatal(err)
		}
		check(t, b, &r)
	}
}

func TestParseSkipsUnknownFieldsAndKeepsLastDuplicateAttribute(t *testing.T) {
	entry := func(k, v string) []byte {
		e := protowire.AppendTag(nil, mapKey, protowire.BytesType)
		e = protowire.AppendString(e, k)
		e = protowire.AppendTag(e, mapValue, protowire.BytesType)
		return protowire.AppendString(e, v)
	}
	var msg []byte
	msg = protowire.AppendTag(msg, 99, protowire.VarintType) // unknown field
	msg = protowire.AppendVarint(msg, 7)
	for _, kv := range [][2]string{{"b", "1"}, {"a", "2"}, {"b", "3"}} {
		msg = protowire.AppendTag(msg, msgAttributes, protowire.BytesType)
		msg = protowire.AppendBytes(msg, entry(kv[0], kv[1]))
	}
	msg = protowire.AppendTag(msg, msgMessageID, protowire.BytesType)
	msg = protowire.AppendString(msg, "42")
	var rm []byte
	rm = protowire.AppendTag(rm, recvMessage, protowire.BytesType)
	rm = protowire.AppendBytes(rm, msg)
	rm = protowire.AppendTag(rm, recvAckID, protowire.BytesType)
	rm = protowire.AppendString(rm, "ack-1")
	var resp []byte
	resp = protowire.AppendTag(resp, 50, protowire.BytesType) // unknown, length-delimited
	resp = protowire.AppendBytes(resp, []byte("whatever"))
	resp = protowire.AppendTag(resp, respReceivedMessages, protowire.BytesType)
	resp = protowire.AppendBytes(resp, rm)

	var r Response
	check(t, resp, &r) // proto agrees: map semantics keep the last "b"
	got := r.Messages[0].Attributes
	if len(got) != 2 || string(got[0].Key) != "a" || string(got[1].Value) != "3" {
		t.Fatalf("attributes = %q", got)
	}
	if len(r.Messages[0].Data) != 0 || r.Messages[0].HasPublishTime {
		t.Fatalf("absent data/publish_time must be empty/absent: %+v", r.Messages[0])
	}
}

func TestParseRejectsMalformedInput(t *testing.T) {
	good, _ := proto.Marshal(randomResponse(rand.New(rand.NewPCG(3, 4))))
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"truncated", good[:len(good)-3]},
		{"bad tag", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"invalid utf8 ack id", protowire.AppendBytes(protowire.AppendTag(nil, respReceivedMessages, protowire.BytesType),
			protowire.AppendBytes(protowire.AppendTag(nil, recvAckID, protowire.BytesType), []byte{0xff, 0xfe}))},
	} {
		var r Response
		if err := r.Parse(tc.b); err == nil {
			t.Errorf("%s: Parse succeeded", tc.name)
		} else if !bytes.Contains([]byte(err.Error()), []byte("malformed StreamingPullResponse")) {
			t.Errorf("%s: error %q does not say what is wrong", tc.name, err)
		}
	}
}

// FuzzParse: whatever protobuf accepts, Parse accepts and decodes the same.
func FuzzParse(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 5 {
		b, _ := proto.Marshal(randomResponse(rng))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want pb.StreamingPullResponse
		if proto.Unmarshal(b, &want) != nil {
			var r Response
			r.Parse(b) // must not panic
			return
		}
		var r Response
		check(t, b, &r)
	})
}

func BenchmarkParse1KB(b *testing.B) {
	buf := bench1KB()
	var r Response
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Parse(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
}
