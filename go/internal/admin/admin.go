// Package admin creates and deletes topics and subscriptions, so the demo,
// the tests and users without Google's SDK can set up an emulator.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	pubsub "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// Request is one admin operation.
type Request struct {
	clientopt.Options
	Op                    string `json:"op"`
	Topic                 string `json:"topic"`
	Subscription          string `json:"subscription"`
	AckDeadlineSeconds    int32  `json:"ack_deadline_seconds"`
	EnableMessageOrdering bool   `json:"enable_message_ordering"`
	DeadLetterTopic       string `json:"dead_letter_topic"`
	MaxDeliveryAttempts   int32  `json:"max_delivery_attempts"`
	RetainAckedSeconds    int64  `json:"retain_acked_seconds"`
	// MessageRetentionSeconds is how long unacked messages are kept
	// (10 minutes to 31 days; 0: the service default, 7 days).
	MessageRetentionSeconds   int64  `json:"message_retention_seconds"`
	Filter                    string `json:"filter"`
	EnableExactlyOnceDelivery bool   `json:"enable_exactly_once_delivery"`
	TimeoutMs                 int    `json:"timeout_ms"`
	// Seek: exactly one of TimeUnixMicros (> 0) and Snapshot.
	TimeUnixMicros int64  `json:"time_unix_micros"`
	Snapshot       string `json:"snapshot"`
	// get_topic_schema: the reader revision to pin (empty: the newest).
	Revision string `json:"revision"`
}

// Ops lists the supported operations.
var Ops = []string{"create_topic", "delete_topic", "get_topic", "create_subscription", "delete_subscription",
	"get_subscription", "seek", "create_snapshot", "delete_snapshot", "default_project", "get_topic_schema"}

// Parse decodes a request strictly: unknown keys are errors.
func Parse(raw []byte) (Request, error) {
	var r Request
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, rpc.Errorf(codes.InvalidArgument, "malformed admin request: %v", err)
	}
	if err := r.Options.Validate(); err != nil {
		return r, rpc.Errorf(codes.InvalidArgument, "%v", err)
	}
	return r, nil
}

// Do runs the request and returns a JSON result.
func Do(ctx context.Context, r Request) ([]byte, error) {
	timeout := 30 * time.Second
	if r.TimeoutMs > 0 {
		timeout = time.Duration(r.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch r.Op {
	case "default_project":
		p, err := clientopt.DefaultProject(ctx, r.Options)
		if err != nil {
			return nil, rpc.Errorf(codes.FailedPrecondition, "finding the default project: %v", err)
		}
		return json.Marshal(map[string]string{"project": p})
	case "get_topic_schema":
		return doTopicSchema(ctx, r)
	case "seek", "create_snapshot", "delete_snapshot":
		return withClient(ctx, pubsub.NewSubscriptionAdminClient, r, doSnapshotOp)
	case "create_topic", "delete_topic", "get_topic":
		if err := need(r.Op, "topic", r.Topic); err != nil {
			return nil, err
		}
		return withClient(ctx, pubsub.NewTopicAdminClient, r, doTopicOp)
	case "create_subscription", "delete_subscription", "get_subscription":
		if err := need(r.Op, "subscription", r.Subscription); err != nil {
			return nil, err
		}
		return withClient(ctx, pubsub.NewSubscriptionAdminClient, r, doSubscriptionOp)
	}
	return nil, rpc.Errorf(codes.InvalidArgument, "unknown admin op %q; expected one of %v", r.Op, Ops)
}

// withClient opens the admin client one request needs, runs op with it and
// closes it: every op but default_project talks to the service this way.
func withClient[C interface{ Close() error }](ctx context.Context,
	open func(context.Context, ...option.ClientOption) (C, error), r Request,
	op func(context.Context, C, Request) ([]byte, error)) ([]byte, error) {
	c, err := open(ctx, r.Options.ClientOptions()...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return op(ctx, c, r)
}

// pathForms are the resource paths the request keys hold, for errors.
var pathForms = map[string]string{
	"topic":        "projects/P/topics/T",
	"subscription": "projects/P/subscriptions/S",
	"snapshot":     "projects/P/snapshots/N",
}

// need fails with INVALID_ARGUMENT when op lacks the request key key.
func need(op, key, value string) error {
	if value != "" {
		return nil
	}
	return rpc.Errorf(codes.InvalidArgument, "%s needs %q: %s", op, key, pathForms[key])
}

// doTopicOp runs create_topic, get_topic and delete_topic.
func doTopicOp(ctx context.Context, c *pubsub.TopicAdminClient, r Request) ([]byte, error) {
	switch r.Op {
	case "create_topic":
		t, err := c.CreateTopic(ctx, &pubsubpb.Topic{Name: r.Topic})
		if err != nil {
			return nil, fmt.Errorf("create topic %s: %w", r.Topic, err)
		}
		return json.Marshal(map[string]string{"name": t.Name})
	case "get_topic":
		t, err := c.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: r.Topic})
		if err != nil {
			return nil, fmt.Errorf("get topic %s: %w", r.Topic, err)
		}
		return json.Marshal(map[string]string{"name": t.Name})
	default:
		if err := c.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: r.Topic}); err != nil {
			return nil, fmt.Errorf("delete topic %s: %w", r.Topic, err)
		}
		return []byte("{}"), nil
	}
}

// doSubscriptionOp runs create_subscription, get_subscription and
// delete_subscription.
func doSubscriptionOp(ctx context.Context, c *pubsub.SubscriptionAdminClient, r Request) ([]byte, error) {
	switch r.Op {
	case "create_subscription":
		if err := need(r.Op, "topic", r.Topic); err != nil {
			return nil, err
		}
		s := &pubsubpb.Subscription{
			Name:                      r.Subscription,
			Topic:                     r.Topic,
			AckDeadlineSeconds:        r.AckDeadlineSeconds,
			EnableMessageOrdering:     r.EnableMessageOrdering,
			Filter:                    r.Filter,
			EnableExactlyOnceDelivery: r.EnableExactlyOnceDelivery,
		}
		if r.MessageRetentionSeconds > 0 {
			s.MessageRetentionDuration = durationpb.New(time.Duration(r.MessageRetentionSeconds) * time.Second)
		}
		if r.DeadLetterTopic != "" {
			s.DeadLetterPolicy = &pubsubpb.DeadLetterPolicy{DeadLetterTopic: r.DeadLetterTopic, MaxDeliveryAttempts: r.MaxDeliveryAttempts}
		}
		if r.RetainAckedSeconds > 0 {
			s.RetainAckedMessages = true
			if r.MessageRetentionSeconds == 0 {
				s.MessageRetentionDuration = durationpb.New(time.Duration(r.RetainAckedSeconds) * time.Second)
			}
		}
		got, err := c.CreateSubscription(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("create subscription %s: %w", r.Subscription, err)
		}
		return subscriptionJSON(got)
	case "get_subscription":
		got, err := c.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: r.Subscription})
		if err != nil {
			return nil, fmt.Errorf("get subscription %s: %w", r.Subscription, err)
		}
		return subscriptionJSON(got)
	default:
		if err := c.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: r.Subscription}); err != nil {
			return nil, fmt.Errorf("delete subscription %s: %w", r.Subscription, err)
		}
		return []byte("{}"), nil
	}
}

func subscriptionJSON(s *pubsubpb.Subscription) ([]byte, error) {
	out := map[string]any{
		"name":                         s.Name,
		"topic":                        s.Topic,
		"ack_deadline_seconds":         s.AckDeadlineSeconds,
		"enable_message_ordering":      s.EnableMessageOrdering,
		"enable_exactly_once_delivery": s.EnableExactlyOnceDelivery,
		"filter":                       s.Filter,
		"retain_acked_messages":        s.RetainAckedMessages,
	}
	if d := s.MessageRetentionDuration; d != nil {
		out["message_retention_seconds"] = int64(d.AsDuration() / time.Second)
	}
	if s.DeadLetterPolicy != nil {
		out["dead_letter_topic"] = s.DeadLetterPolicy.DeadLetterTopic
		out["max_delivery_attempts"] = s.DeadLetterPolicy.MaxDeliveryAttempts
	}
	return json.Marshal(out)
}
