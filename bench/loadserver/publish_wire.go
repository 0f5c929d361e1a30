package main

import (
	"context"
	"errors"
	"slices"
	"sync"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// Publish requests are read as wire bytes: the server only counts messages
// and their data bytes, and proto.Unmarshal built every message (its data
// copied, its attribute map allocated) just to be dropped. At 1 KiB
// messages that, and the garbage collection after it, was most of the
// server's CPU in the Spark sink benchmark, CPU that real Pub/Sub spends
// on machines of its own (bench/tools/sink_cpu.py).

// Field numbers from google/pubsub/v1/pubsub.proto.
const (
	fieldPublishTopic    protowire.Number = 1 // PublishRequest
	fieldPublishMessages protowire.Number = 2
	fieldMessageData     protowire.Number = 1 // PubsubMessage
)

var errMalformedPublish = errors.New("loadserver: malformed PublishRequest")

// publishSummary is what the server keeps of a PublishRequest.
type publishSummary struct {
	topic     string
	messages  int
	dataBytes int64
}

// unmarshal reads a request from gRPC's buffers: in place when it arrived
// in one buffer, else from a copy in a reused scratch buffer.
func (s *publishSummary) unmarshal(data mem.BufferSlice) error {
	if len(data) == 1 {
		return s.parse(data[0].ReadOnlyData())
	}
	buf := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(buf)
	n := data.Len()
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	*buf = (*buf)[:n]
	data.CopyTo(*buf)
	return s.parse(*buf)
}

var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// parse reads the topic and, per message, only its data length; every
// other field is skipped. As in proto, the last of repeated scalar fields
// wins.
func (s *publishSummary) parse(b []byte) error {
	*s = publishSummary{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformedPublish
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != fieldPublishTopic && num != fieldPublishMessages) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return errMalformedPublish
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return errMalformedPublish
		}
		b = b[n:]
		if num == fieldPublishTopic {
			s.topic = string(v)
			continue
		}
		d, err := messageDataLen(v)
		if err != nil {
			return err
		}
		s.messages++
		s.dataBytes += int64(d)
	}
	return nil
}

// messageDataLen is the length of an encoded PubsubMessage's data field.
func messageDataLen(m []byte) (int, error) {
	d := 0
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return 0, errMalformedPublish
		}
		m = m[n:]
		if num == fieldMessageData && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(m)
			if n < 0 {
				return 0, errMalformedPublish
			}
			d, m = len(v), m[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, m); n < 0 {
			return 0, errMalformedPublish
		}
		m = m[n:]
	}
	return d, nil
}

// publisherServiceDesc is the generated Publisher service with Publish
// decoding into a publishSummary (the codec reads it, codec.go).
func publisherServiceDesc() *grpc.ServiceDesc {
	d := pubsubpb.Publisher_ServiceDesc
	d.Methods = slices.Clone(d.Methods)
	for i := range d.Methods {
		if d.Methods[i].MethodName == "Publish" {
			d.Methods[i].Handler = publishHandler
			return &d
		}
	}
	panic("loadserver: the generated Publisher service has no Publish method")
}

// publishHandler stands in for the generated handler; the server installs
// no interceptors, so there is none to call.
func publishHandler(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	req := new(publishSummary)
	if err := dec(req); err != nil {
		return nil, err
	}
	return srv.(*publisherService).publish(ctx, req)
}
