package main

import (
	"context"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Admin RPCs: cheap, in-memory, enough for clients that look resources up.

func (p *publisherService) CreateTopic(ctx context.Context, t *pubsubpb.Topic) (*pubsubpb.Topic, error) {
	return p.reg.createTopic(t)
}

func (p *publisherService) GetTopic(ctx context.Context, req *pubsubpb.GetTopicRequest) (*pubsubpb.Topic, error) {
	return p.reg.getTopic(req.GetTopic())
}

func (p *publisherService) DeleteTopic(ctx context.Context, req *pubsubpb.DeleteTopicRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, p.reg.deleteTopic(req.GetTopic())
}

func (s *subscriberService) CreateSubscription(ctx context.Context, req *pubsubpb.Subscription) (*pubsubpb.Subscription, error) {
	sub, err := s.reg.createSubscription(req)
	if err != nil {
		return nil, err
	}
	return sub.info, nil
}

func (s *subscriberService) GetSubscription(ctx context.Context, req *pubsubpb.GetSubscriptionRequest) (*pubsubpb.Subscription, error) {
	sub, err := s.reg.getSubscription(req.GetSubscription())
	if err != nil {
		return nil, err
	}
	return sub.info, nil
}

func (s *subscriberService) DeleteSubscription(ctx context.Context, req *pubsubpb.DeleteSubscriptionRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, s.reg.deleteSubscription(req.GetSubscription())
}
