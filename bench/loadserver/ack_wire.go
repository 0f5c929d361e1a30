package main

import (
	"errors"
	"unsafe"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// Acknowledge and ModifyAckDeadline requests are read from wire bytes into
// the generated structs, with every ack id a view into one copy of the
// request. proto.Unmarshal allocated a string per ack id and validated
// each as UTF-8: 1.6% of the machine's CPU in a Spark run at 350k rows/s,
// in the server that shares the 2 cores with what is measured
// (bench/tools/spark_cpu.py --perf). Real Pub/Sub spends that
// on machines of its own. The server only looks ack ids up (ackid.go), so
// an id that is not UTF-8 is simply one it never issued.

// Field numbers from google/pubsub/v1/pubsub.proto.
const (
	fieldAckSubscription    protowire.Number = 1 // AcknowledgeRequest
	fieldAckAckIDs          protowire.Number = 2
	fieldModackSubscription protowire.Number = 1 // ModifyAckDeadlineRequest
	fieldModackDeadline     protowire.Number = 3
	fieldModackAckIDs       protowire.Number = 4
)

var errMalformedAckRequest = errors.New("loadserver: malformed Acknowledge or ModifyAckDeadline request")

func unmarshalAck(data mem.BufferSlice, req *pubsubpb.AcknowledgeRequest) error {
	b := data.Materialize() // the ids point into it, so it must outlive data
	sub, ids, _, err := parseAckRequest(b, fieldAckSubscription, fieldAckAckIDs, 0)
	*req = pubsubpb.AcknowledgeRequest{Subscription: sub, AckIds: ids}
	return err
}

func unmarshalModack(data mem.BufferSlice, req *pubsubpb.ModifyAckDeadlineRequest) error {
	b := data.Materialize()
	sub, ids, secs, err := parseAckRequest(b, fieldModackSubscription, fieldModackAckIDs, fieldModackDeadline)
	*req = pubsubpb.ModifyAckDeadlineRequest{Subscription: sub, AckIds: ids, AckDeadlineSeconds: secs}
	return err
}

// parseAckRequest reads the subscription, the ack ids and (if deadline is
// not 0) an int32 deadline field; other fields are skipped. As in proto,
// the last of repeated scalar fields wins.
func parseAckRequest(b []byte, subscription, ackIDs, deadline protowire.Number) (string, []string, int32, error) {
	var (
		sub  string
		ids  []string
		secs int32
	)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", nil, 0, errMalformedAckRequest
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && (num == subscription || num == ackIDs):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return "", nil, 0, errMalformedAckRequest
			}
			b = b[n:]
			s := unsafe.String(unsafe.SliceData(v), len(v)) // b is never written again
			if num == subscription {
				sub = s
			} else {
				ids = append(ids, s)
			}
		case deadline != 0 && num == deadline && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return "", nil, 0, errMalformedAckRequest
			}
			b = b[n:]
			secs = int32(v)
		default:
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return "", nil, 0, errMalformedAckRequest
			}
			b = b[n:]
		}
	}
	return sub, ids, secs, nil
}
