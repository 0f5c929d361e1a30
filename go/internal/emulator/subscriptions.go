package emulator

import (
	"context"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The service's subscription defaults and ranges.
const (
	defaultAckDeadline     = 10 * time.Second
	minAckDeadline         = 10 * time.Second
	defaultRetention       = 7 * 24 * time.Hour
	minRetention           = 10 * time.Minute
	maxRetention           = 7 * 24 * time.Hour
	defaultMaxAttempts     = 5
	minMaxAttempts         = 5
	maxMaxAttempts         = 100
	defaultRetryMinBackoff = 10 * time.Second
	defaultRetryMaxBackoff = 600 * time.Second
)

// subscriberService is the Subscriber API: subscriptions (here), delivery
// (streaming.go, pull.go), acks (acks.go), snapshots and seek (seek.go).
type subscriberService struct {
	pubsubpb.UnimplementedSubscriberServer
	st *state
}

func (st *state) subscription(name string) (*subscription, error) {
	if err := checkName(name, "subscriptions"); err != nil {
		return nil, err
	}
	st.mu.RLock()
	s := st.subs[name]
	st.mu.RUnlock()
	if s == nil {
		return nil, notFound("Subscription", name)
	}
	return s, nil
}

// settingsOf checks a subscription resource, fills in the service's
// defaults, and derives its delivery settings.
func (st *state) settingsOf(pb *pubsubpb.Subscription) (settings, error) {
	set := settings{ackDeadline: defaultAckDeadline, retention: defaultRetention}
	if secs := pb.AckDeadlineSeconds; secs != 0 {
		d := time.Duration(secs) * time.Second
		if d < minAckDeadline || secs > maxAckDeadline {
			return set, status.Errorf(codes.InvalidArgument, "invalid ack_deadline_seconds %d: expected 10 to %d", secs, maxAckDeadline)
		}
		set.ackDeadline = d
	}
	pb.AckDeadlineSeconds = int32(set.ackDeadline / time.Second)
	if r := pb.MessageRetentionDuration; r != nil {
		d := r.AsDuration()
		if d < minRetention || d > maxRetention {
			return set, status.Errorf(codes.InvalidArgument, "invalid message_retention_duration %s: expected 10m to 168h", d)
		}
		set.retention = d
	}
	pb.MessageRetentionDuration = durationpb.New(set.retention)
	set.retainAcked = pb.RetainAckedMessages
	set.ordered = pb.EnableMessageOrdering
	set.exactlyOnce = pb.EnableExactlyOnceDelivery
	if pb.Filter != "" {
		f, err := parseFilter(pb.Filter)
		if err != nil {
			return set, status.Errorf(codes.InvalidArgument, "invalid filter %q: %v", pb.Filter, err)
		}
		set.filter = f
	}
	if dl := pb.DeadLetterPolicy; dl != nil {
		if err := checkName(dl.DeadLetterTopic, "topics"); err != nil {
			return set, status.Errorf(codes.InvalidArgument, "dead_letter_policy: %v", status.Convert(err).Message())
		}
		if st.topics[dl.DeadLetterTopic] == nil {
			return set, status.Errorf(codes.NotFound, "dead_letter_policy: dead-letter topic not found: %s", dl.DeadLetterTopic)
		}
		if dl.MaxDeliveryAttempts == 0 {
			dl.MaxDeliveryAttempts = defaultMaxAttempts
		}
		if dl.MaxDeliveryAttempts < minMaxAttempts || dl.MaxDeliveryAttempts > maxMaxAttempts {
			return set, status.Errorf(codes.InvalidArgument, "dead_letter_policy: max_delivery_attempts %d, expected %d to %d",
				dl.MaxDeliveryAttempts, minMaxAttempts, maxMaxAttempts)
		}
		set.deadLetter = dl.DeadLetterTopic
		set.maxAttempts = uint32(dl.MaxDeliveryAttempts)
	}
	if rp := pb.RetryPolicy; rp != nil {
		set.retry = true
		set.retryMin, set.retryMax = defaultRetryMinBackoff, defaultRetryMaxBackoff
		if rp.MinimumBackoff != nil {
			set.retryMin = rp.MinimumBackoff.AsDuration()
		}
		if rp.MaximumBackoff != nil {
			set.retryMax = rp.MaximumBackoff.AsDuration()
		}
		if set.retryMin < 0 || set.retryMin > defaultRetryMaxBackoff || set.retryMax < set.retryMin || set.retryMax > defaultRetryMaxBackoff {
			return set, status.Errorf(codes.InvalidArgument, "retry_policy: backoffs %s..%s, expected 0 <= minimum <= maximum <= 600s",
				set.retryMin, set.retryMax)
		}
		rp.MinimumBackoff, rp.MaximumBackoff = durationpb.New(set.retryMin), durationpb.New(set.retryMax)
	}
	if pb.ExpirationPolicy == nil {
		pb.ExpirationPolicy = &pubsubpb.ExpirationPolicy{Ttl: durationpb.New(31 * 24 * time.Hour)}
	}
	pb.State = pubsubpb.Subscription_ACTIVE
	return set, nil
}

func (s *subscriberService) CreateSubscription(_ context.Context, req *pubsubpb.Subscription) (*pubsubpb.Subscription, error) {
	if err := checkName(req.Name, "subscriptions"); err != nil {
		return nil, err
	}
	if err := checkName(req.Topic, "topics"); err != nil {
		return nil, err
	}
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.subs[req.Name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "Subscription already exists: %s", req.Name)
	}
	t := st.topics[req.Topic]
	if t == nil {
		return nil, notFound("Topic", req.Topic)
	}
	pb := proto.Clone(req).(*pubsubpb.Subscription)
	set, err := st.settingsOf(pb)
	if err != nil {
		return nil, err
	}
	sub := newSubscription(st, pb, set)
	st.subs[pb.Name] = sub
	t.subs[pb.Name] = sub
	return proto.Clone(pb).(*pubsubpb.Subscription), nil
}

func (s *subscriberService) GetSubscription(_ context.Context, req *pubsubpb.GetSubscriptionRequest) (*pubsubpb.Subscription, error) {
	sub, err := s.st.subscription(req.Subscription)
	if err != nil {
		return nil, err
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return proto.Clone(sub.pb).(*pubsubpb.Subscription), nil
}

// subscriptionMaskRoots are the fields UpdateSubscription changes (and any
// field below them: "retry_policy.minimum_backoff", "push_config.attributes").
var subscriptionMaskRoots = map[string]bool{"ack_deadline_seconds": true, "labels": true, "push_config": true, "bigquery_config": true,
	"cloud_storage_config": true, "bigtable_config": true, "retain_acked_messages": true, "message_retention_duration": true,
	"expiration_policy": true, "dead_letter_policy": true, "retry_policy": true, "enable_exactly_once_delivery": true,
	"message_transforms": true}

func (s *subscriberService) UpdateSubscription(_ context.Context, req *pubsubpb.UpdateSubscriptionRequest) (*pubsubpb.Subscription, error) {
	if req.Subscription == nil || req.UpdateMask == nil || len(req.UpdateMask.Paths) == 0 {
		return nil, status.Error(codes.InvalidArgument, "update subscription: a subscription and a non-empty update_mask are required")
	}
	if err := checkName(req.Subscription.Name, "subscriptions"); err != nil {
		return nil, err
	}
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	sub := st.subs[req.Subscription.Name]
	if sub == nil {
		return nil, notFound("Subscription", req.Subscription.Name)
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	pb := proto.Clone(sub.pb).(*pubsubpb.Subscription)
	in := proto.Clone(req.Subscription).(*pubsubpb.Subscription)
	for _, path := range req.UpdateMask.Paths {
		switch path {
		case "filter", "enable_message_ordering", "topic":
			return nil, status.Errorf(codes.InvalidArgument, "update subscription: %s cannot be changed once the subscription exists", path)
		}
		if err := applyMask(pb, in, path, "UpdateSubscriptionRequest", subscriptionMaskRoots); err != nil {
			return nil, err
		}
	}
	set, err := st.settingsOf(pb)
	if err != nil {
		return nil, err
	}
	sub.pb, sub.set = pb, set
	return proto.Clone(pb).(*pubsubpb.Subscription), nil
}

func (s *subscriberService) ListSubscriptions(_ context.Context, req *pubsubpb.ListSubscriptionsRequest) (*pubsubpb.ListSubscriptionsResponse, error) {
	if err := checkProject(req.Project); err != nil {
		return nil, err
	}
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	var names []string
	for name := range st.subs {
		if project(name) == req.Project {
			names = append(names, name)
		}
	}
	page, next, err := paginate(names, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	resp := &pubsubpb.ListSubscriptionsResponse{NextPageToken: next}
	for _, name := range page {
		sub := st.subs[name]
		sub.mu.Lock()
		resp.Subscriptions = append(resp.Subscriptions, proto.Clone(sub.pb).(*pubsubpb.Subscription))
		sub.mu.Unlock()
	}
	return resp, nil
}

func (s *subscriberService) DeleteSubscription(_ context.Context, req *pubsubpb.DeleteSubscriptionRequest) (*emptypb.Empty, error) {
	if err := checkName(req.Subscription, "subscriptions"); err != nil {
		return nil, err
	}
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	sub := st.subs[req.Subscription]
	if sub == nil {
		return nil, notFound("Subscription", req.Subscription)
	}
	delete(st.subs, req.Subscription)
	st.policies.forget(req.Subscription)
	for _, t := range st.topics {
		delete(t.subs, req.Subscription)
	}
	sub.delete()
	return &emptypb.Empty{}, nil
}

func (s *subscriberService) ModifyPushConfig(_ context.Context, req *pubsubpb.ModifyPushConfigRequest) (*emptypb.Empty, error) {
	sub, err := s.st.subscription(req.Subscription)
	if err != nil {
		return nil, err
	}
	sub.mu.Lock()
	sub.pb.PushConfig = req.PushConfig
	sub.mu.Unlock()
	return &emptypb.Empty{}, nil
}
