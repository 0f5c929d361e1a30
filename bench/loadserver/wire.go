package main

import (
	"fmt"
	"strconv"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// StreamingPull responses are written directly in protobuf wire format.
// Every synthetic message carries the same payload and attributes, so that
// part is encoded once (synth.fixed) and each message only adds its ids,
// publish time, ordering key and delivery attempt. proto.Marshal re-encodes
// all of it per message, walking the attribute map through reflection, and
// that was most of the server's CPU per message.

// Field numbers from google/pubsub/v1/pubsub.proto and
// google/protobuf/timestamp.proto. PubsubMessage fields 1 (data) and 2
// (attributes) are in synth.fixed.
const (
	fieldResponseReceivedMessages       protowire.Number = 1 // StreamingPullResponse
	fieldResponseSubscriptionProperties protowire.Number = 4
	fieldReceivedAckID                  protowire.Number = 1 // ReceivedMessage
	fieldReceivedMessage                protowire.Number = 2
	fieldReceivedDeliveryAttempt        protowire.Number = 3
	fieldMessageID                      protowire.Number = 3 // PubsubMessage
	fieldMessagePublishTime             protowire.Number = 4
	fieldMessageOrderingKey             protowire.Number = 5
	fieldTimestampSeconds               protowire.Number = 1 // Timestamp
	fieldTimestampNanos                 protowire.Number = 2
)

// encodeFixed is the wire form of the fields all synthetic messages share.
func encodeFixed(payload []byte, attrs map[string]string) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pubsubpb.PubsubMessage{Data: payload, Attributes: attrs})
	if err != nil {
		panic(fmt.Sprintf("loadserver: encoding the synthetic message: %v", err))
	}
	return b
}

// responseEncoder writes one stream's StreamingPullResponses; its scratch
// space is reused from batch to batch.
type responseEncoder struct {
	synth *synth
	props []byte // the subscription_properties field, in every response
	pool  mem.BufferPool
	msg   encodedMessage

	ids   []byte // the batch's ack and message ids, back to back
	ends  []int  // ack id i ends at ends[2i], its message id at ends[2i+1]
	sizes []int  // encoded PubsubMessage sizes
	ts    []byte // the publish_time field
	// at, if set, gives each message its own publish time (--rate); tss
	// holds those fields back to back, message i's ending at tsEnds[i].
	at     func(msg uint64) time.Time
	tss    []byte
	tsEnds []int
}

func newResponseEncoder(s *synth, props *pubsubpb.StreamingPullResponse_SubscriptionProperties, pool mem.BufferPool) *responseEncoder {
	p, err := proto.Marshal(props)
	if err != nil {
		panic(fmt.Sprintf("loadserver: encoding subscription properties: %v", err))
	}
	b := protowire.AppendTag(nil, fieldResponseSubscriptionProperties, protowire.BytesType)
	return &responseEncoder{synth: s, props: protowire.AppendBytes(b, p), pool: pool}
}

// encode returns the response delivering ps, leased by lease with
// consecutive sequence numbers from first, published at now. It must be
// sent before the next call: the result is reused.
func (e *responseEncoder) encode(ps []pending, lease, first uint64, now time.Time) *encodedMessage {
	e.ids, e.ends, e.sizes = e.ids[:0], e.ends[:0], e.sizes[:0]
	e.ts = appendTimestampField(e.ts[:0], fieldMessagePublishTime, now)
	e.tss, e.tsEnds = e.tss[:0], e.tsEnds[:0]

	// Pass 1: ids and sizes, so that the buffer is allocated once and every
	// length prefix is known before it is written.
	total := len(e.props)
	for i, p := range ps {
		start := len(e.ids)
		e.ids = appendAckID(e.ids, lease, first+uint64(i))
		ackEnd := len(e.ids)
		e.ids = strconv.AppendUint(e.ids, p.msg+1, 10) // message ids start at 1
		e.ends = append(e.ends, ackEnd, len(e.ids))
		tsLen := len(e.ts)
		if e.at != nil {
			n := len(e.tss)
			e.tss = appendTimestampField(e.tss, fieldMessagePublishTime, e.at(p.msg))
			e.tsEnds = append(e.tsEnds, len(e.tss))
			tsLen = len(e.tss) - n
		}
		m := len(e.synth.fixed) + protowire.SizeTag(fieldMessageID) + protowire.SizeBytes(len(e.ids)-ackEnd) +
			tsLen + sizeStringField(fieldMessageOrderingKey, e.synth.orderingKey(p.msg))
		e.sizes = append(e.sizes, m)
		total += protowire.SizeTag(fieldResponseReceivedMessages) + protowire.SizeBytes(receivedSize(ackEnd-start, m, p.attempt))
	}

	// Pass 2: write, in field-number order as proto.Marshal does.
	buf := e.pool.Get(total)
	b := (*buf)[:0]
	start := 0
	for i, p := range ps {
		ackEnd, idEnd, m := e.ends[2*i], e.ends[2*i+1], e.sizes[i]
		b = protowire.AppendTag(b, fieldResponseReceivedMessages, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(receivedSize(ackEnd-start, m, p.attempt)))
		b = protowire.AppendTag(b, fieldReceivedAckID, protowire.BytesType)
		b = protowire.AppendBytes(b, e.ids[start:ackEnd])
		b = protowire.AppendTag(b, fieldReceivedMessage, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(m))
		b = append(b, e.synth.fixed...)
		b = protowire.AppendTag(b, fieldMessageID, protowire.BytesType)
		b = protowire.AppendBytes(b, e.ids[ackEnd:idEnd])
		if e.at != nil {
			tsStart := 0
			if i > 0 {
				tsStart = e.tsEnds[i-1]
			}
			b = append(b, e.tss[tsStart:e.tsEnds[i]]...)
		} else {
			b = append(b, e.ts...)
		}
		if key := e.synth.orderingKey(p.msg); key != "" {
			b = protowire.AppendTag(b, fieldMessageOrderingKey, protowire.BytesType)
			b = protowire.AppendString(b, key)
		}
		if p.attempt != 0 {
			b = protowire.AppendTag(b, fieldReceivedDeliveryAttempt, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(p.attempt)) // int32: negatives sign-extend
		}
		start = idEnd
	}
	b = append(b, e.props...)
	if len(b) != total {
		panic(fmt.Sprintf("loadserver: encoded %d bytes, sized %d", len(b), total))
	}
	e.msg.buf = mem.NewBuffer(buf, e.pool)
	return &e.msg
}

// receivedSize is the encoded size of a ReceivedMessage whose ack id has
// ackLen bytes and whose PubsubMessage has msgSize.
func receivedSize(ackLen, msgSize int, attempt int32) int {
	n := protowire.SizeTag(fieldReceivedAckID) + protowire.SizeBytes(ackLen) +
		protowire.SizeTag(fieldReceivedMessage) + protowire.SizeBytes(msgSize)
	if attempt != 0 {
		n += protowire.SizeTag(fieldReceivedDeliveryAttempt) + protowire.SizeVarint(uint64(attempt))
	}
	return n
}

// sizeStringField is the encoded size of a proto3 string field (nothing
// when empty).
func sizeStringField(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

// appendTimestampField appends field num holding t as a
// google.protobuf.Timestamp, the values timestamppb.New(t) has.
func appendTimestampField(b []byte, num protowire.Number, t time.Time) []byte {
	secs, nanos := uint64(t.Unix()), uint64(int64(t.Nanosecond()))
	n := 0
	if secs != 0 {
		n += protowire.SizeTag(fieldTimestampSeconds) + protowire.SizeVarint(secs)
	}
	if nanos != 0 {
		n += protowire.SizeTag(fieldTimestampNanos) + protowire.SizeVarint(nanos)
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	if secs != 0 {
		b = protowire.AppendTag(b, fieldTimestampSeconds, protowire.VarintType)
		b = protowire.AppendVarint(b, secs)
	}
	if nanos != 0 {
		b = protowire.AppendTag(b, fieldTimestampNanos, protowire.VarintType)
		b = protowire.AppendVarint(b, nanos)
	}
	return b
}
