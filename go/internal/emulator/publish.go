package emulator

import (
	"context"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The service's publish limits.
const (
	maxPublishMessages  = 1000
	maxPublishBytes     = 10 << 20
	maxAttributes       = 100
	maxAttributeKey     = 256
	maxAttributeValue   = 1024
	maxOrderingKeyBytes = 1024
)

func (p *publisherService) Publish(_ context.Context, req *pubsubpb.PublishRequest) (*pubsubpb.PublishResponse, error) {
	if err := checkName(req.Topic, "topics"); err != nil {
		return nil, err
	}
	if n := len(req.Messages); n == 0 || n > maxPublishMessages {
		return nil, status.Errorf(codes.InvalidArgument, "publish: %d messages in one request, expected 1 to %d", n, maxPublishMessages)
	}
	total := 0
	for i, m := range req.Messages {
		if err := checkMessage(i, m); err != nil {
			return nil, err
		}
		total += len(m.Data)
	}
	if total > maxPublishBytes {
		return nil, status.Errorf(codes.InvalidArgument, "publish: request holds %d bytes of data, over the service's %d", total, maxPublishBytes)
	}
	ids, err := p.st.publish(req.Topic, req.Messages, true)
	if err != nil {
		return nil, err
	}
	return &pubsubpb.PublishResponse{MessageIds: ids}, nil
}

func checkMessage(i int, m *pubsubpb.PubsubMessage) error {
	if len(m.Data) == 0 && len(m.Attributes) == 0 {
		return status.Errorf(codes.InvalidArgument, "publish: message %d has neither data nor attributes (one is required)", i)
	}
	if len(m.Attributes) > maxAttributes {
		return status.Errorf(codes.InvalidArgument, "publish: message %d has %d attributes, at most %d are allowed", i, len(m.Attributes), maxAttributes)
	}
	for k, v := range m.Attributes {
		if len(k) == 0 || len(k) > maxAttributeKey || len(v) > maxAttributeValue {
			return status.Errorf(codes.InvalidArgument, "publish: message %d attribute %.40q: keys are 1-%d bytes and values at most %d bytes",
				i, k, maxAttributeKey, maxAttributeValue)
		}
		if strings.HasPrefix(k, "goog") {
			return status.Errorf(codes.InvalidArgument, "publish: message %d attribute %.40q: keys starting with \"goog\" are reserved", i, k)
		}
	}
	if len(m.OrderingKey) > maxOrderingKeyBytes {
		return status.Errorf(codes.InvalidArgument, "publish: message %d ordering key is %d bytes, at most %d", i, len(m.OrderingKey), maxOrderingKeyBytes)
	}
	return nil
}

// publish stores copies of msgs in every subscription and snapshot of the
// topic (validated against the topic's schema when validate) and returns
// their message ids.
func (st *state) publish(topicName string, msgs []*pubsubpb.PubsubMessage, validate bool) ([]string, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	t := st.topics[topicName]
	if t == nil {
		return nil, notFound("Topic", topicName)
	}
	var schemaAttrs map[string]string
	if validate {
		var err error
		if schemaAttrs, err = st.validateSchema(t.pb, msgs); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	ts := timestamppb.New(now)
	ids := make([]string, len(msgs))
	first := st.msgIDs.Add(uint64(len(msgs))) - uint64(len(msgs))
	holders := int32(len(t.subs) + len(t.snapshots))
	stored := make([]*message, 0, len(msgs))
	var size int64
	for i, m := range msgs {
		ids[i] = strconv.FormatUint(first+uint64(i)+1, 10)
		if holders == 0 {
			continue
		}
		// The request's message becomes the stored one: the request is
		// this call's own, and copying each message would double the work.
		if len(schemaAttrs) > 0 {
			if m.Attributes == nil {
				m.Attributes = make(map[string]string, len(schemaAttrs))
			}
			for k, v := range schemaAttrs {
				m.Attributes[k] = v
			}
		}
		m.MessageId, m.PublishTime = ids[i], ts
		sm := &message{pb: m, pub: now, size: messageSize(m), mem: &st.mem}
		sm.refs.Store(holders)
		size += sm.size
		stored = append(stored, sm)
	}
	if holders == 0 {
		return ids, nil
	}
	if err := st.mem.reserve(size); err != nil {
		return nil, err
	}
	for _, s := range t.subs {
		s.add(stored)
	}
	for _, sn := range t.snapshots {
		sn.add(stored)
	}
	return ids, nil
}

// deadLettered is a message a subscription gave up on, and after how many
// delivery attempts.
type deadLettered struct {
	pb       *pubsubpb.PubsubMessage
	attempts uint32
}

// deadLetter publishes msgs to the dead-letter topic with the attributes
// the service adds. A dead-letter topic deleted meanwhile loses them, as in
// the service.
func (st *state) deadLetter(topicName, subName string, msgs []deadLettered) {
	if len(msgs) == 0 {
		return
	}
	out := make([]*pubsubpb.PubsubMessage, len(msgs))
	for i, d := range msgs {
		attrs := make(map[string]string, len(d.pb.Attributes)+4)
		for k, v := range d.pb.Attributes {
			attrs[k] = v
		}
		attrs["CloudPubSubDeadLetterSourceDeliveryCount"] = strconv.FormatUint(uint64(d.attempts), 10)
		attrs["CloudPubSubDeadLetterSourceSubscription"] = subName[strings.LastIndexByte(subName, '/')+1:]
		attrs["CloudPubSubDeadLetterSourceSubscriptionProject"] = strings.TrimPrefix(project(subName), "projects/")
		attrs["CloudPubSubDeadLetterSourceTopicPublishTime"] = d.pb.PublishTime.AsTime().UTC().Format("2006-01-02T15:04:05.000Z")
		out[i] = &pubsubpb.PubsubMessage{Data: d.pb.Data, Attributes: attrs, OrderingKey: d.pb.OrderingKey}
	}
	_, _ = st.publish(topicName, out, false)
}
