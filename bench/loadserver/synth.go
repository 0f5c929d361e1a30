package main

import (
	"fmt"
	"strconv"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// synth describes the synthetic messages every subscription serves. The
// payload and attribute map are shared by all messages (gRPC only reads
// them while marshalling).
type synth struct {
	payload []byte
	attrs   map[string]string
	fixed   []byte   // payload and attributes in wire format (see wire.go)
	keys    []string // ordering keys; message n gets keys[n%len(keys)]
	size    int64    // flow-control size of one message
}

func newSynth(payloadBytes, attributes, orderingKeys int, asJSON bool) *synth {
	s := &synth{payload: make([]byte, payloadBytes)}
	for i := range s.payload {
		s.payload[i] = 'a' + byte(i%26)
	}
	if asJSON {
		s.payload = jsonPayload(payloadBytes)
	}
	if attributes > 0 {
		s.attrs = make(map[string]string, attributes)
		for i := range attributes {
			s.attrs[fmt.Sprintf("attr-%03d", i)] = fmt.Sprintf("value-%03d", i)
		}
	}
	s.fixed = encodeFixed(s.payload, s.attrs)
	for i := range orderingKeys {
		s.keys = append(s.keys, fmt.Sprintf("key-%06d", i))
	}
	// Size a representative message the way a client's flow control sees
	// it (the encoded PubsubMessage), with ids of a typical length.
	m := &pubsubpb.PubsubMessage{
		Data: s.payload, Attributes: s.attrs, MessageId: "1000000000",
		PublishTime: timestamppb.Now(), OrderingKey: s.orderingKey(0),
	}
	s.size = int64(proto.Size(m))
	return s
}

// jsonPayload is a JSON object of five typed members padded to about n
// bytes: `id BIGINT, name STRING, score DOUBLE, ok BOOLEAN, at TIMESTAMP`
// plus an ignored "pad" string.
func jsonPayload(n int) []byte {
	head := `{"id": 1234567890123, "name": "user-4711", "score": 1234.5, "ok": true, "at": "2024-05-06T07:08:09.123456Z", "pad": "`
	pad := max(0, n-len(head)-2)
	b := append([]byte(head), make([]byte, pad)...)
	for i := len(head); i < len(b); i++ {
		b[i] = 'a' + byte(i%26)
	}
	return append(b, `"}`...)
}

func (s *synth) orderingKey(msg uint64) string {
	if len(s.keys) == 0 {
		return ""
	}
	return s.keys[msg%uint64(len(s.keys))]
}

// idOverhead bounds the encoded bytes a ReceivedMessage adds around its
// PubsubMessage (ack id, delivery attempt, framing); used to cap responses.
const idOverhead = 48

// idScratch is reusable scratch space for fill.
type idScratch struct {
	b    []byte
	ends []int
}

// fill points rms[i] at message ps[i], delivered by lease as sequence
// firstSeq+i. All ids of the batch live in one string, so a batch costs
// one allocation for ids however many messages it holds.
func (s *synth) fill(rms []*pubsubpb.ReceivedMessage, ps []pending, lease, firstSeq uint64, pt *timestamppb.Timestamp, sc *idScratch) {
	sc.b, sc.ends = sc.b[:0], sc.ends[:0]
	for i, p := range ps {
		sc.b = appendAckID(sc.b, lease, firstSeq+uint64(i))
		sc.ends = append(sc.ends, len(sc.b))
		sc.b = strconv.AppendUint(sc.b, p.msg+1, 10) // message ids start at 1
		sc.ends = append(sc.ends, len(sc.b))
	}
	ids := string(sc.b)
	off := 0
	for i, p := range ps {
		ackEnd, idEnd := sc.ends[2*i], sc.ends[2*i+1]
		rm := rms[i]
		rm.AckId = ids[off:ackEnd]
		rm.DeliveryAttempt = p.attempt
		m := rm.Message
		m.MessageId = ids[ackEnd:idEnd]
		m.PublishTime = pt
		m.OrderingKey = s.orderingKey(p.msg)
		off = idEnd
	}
}

// newReceived returns n ReceivedMessages carrying the shared payload and
// attributes, ready for fill.
func (s *synth) newReceived(n int) []*pubsubpb.ReceivedMessage {
	rms := make([]*pubsubpb.ReceivedMessage, n)
	for i := range rms {
		rms[i] = &pubsubpb.ReceivedMessage{
			Message: &pubsubpb.PubsubMessage{Data: s.payload, Attributes: s.attrs},
		}
	}
	return rms
}
