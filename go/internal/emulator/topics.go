package emulator

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// publisherService is the Publisher API: topics and publishing (publish.go).
type publisherService struct {
	pubsubpb.UnimplementedPublisherServer
	st *state
}

func (p *publisherService) CreateTopic(_ context.Context, t *pubsubpb.Topic) (*pubsubpb.Topic, error) {
	if err := checkName(t.Name, "topics"); err != nil {
		return nil, err
	}
	st := p.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.topics[t.Name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "Topic already exists: %s", t.Name)
	}
	if err := st.checkSchemaSettings(t.SchemaSettings); err != nil {
		return nil, err
	}
	pb := proto.Clone(t).(*pubsubpb.Topic)
	pb.State = pubsubpb.Topic_ACTIVE
	st.topics[t.Name] = &topic{pb: pb, subs: map[string]*subscription{}, snapshots: map[string]*snapshot{}}
	return proto.Clone(pb).(*pubsubpb.Topic), nil
}

func (p *publisherService) GetTopic(_ context.Context, req *pubsubpb.GetTopicRequest) (*pubsubpb.Topic, error) {
	if err := checkName(req.Topic, "topics"); err != nil {
		return nil, err
	}
	p.st.mu.RLock()
	defer p.st.mu.RUnlock()
	t := p.st.topics[req.Topic]
	if t == nil {
		return nil, notFound("Topic", req.Topic)
	}
	return proto.Clone(t.pb).(*pubsubpb.Topic), nil
}

// topicMaskRoots are the fields UpdateTopic changes (and any field below them).
var topicMaskRoots = map[string]bool{"labels": true, "message_storage_policy": true, "kms_key_name": true, "schema_settings": true,
	"message_retention_duration": true, "ingestion_data_source_settings": true, "message_transforms": true}

func (p *publisherService) UpdateTopic(_ context.Context, req *pubsubpb.UpdateTopicRequest) (*pubsubpb.Topic, error) {
	if req.Topic == nil || req.UpdateMask == nil || len(req.UpdateMask.Paths) == 0 {
		return nil, status.Error(codes.InvalidArgument, "update topic: a topic and a non-empty update_mask are required")
	}
	if err := checkName(req.Topic.Name, "topics"); err != nil {
		return nil, err
	}
	st := p.st
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.topics[req.Topic.Name]
	if t == nil {
		return nil, notFound("Topic", req.Topic.Name)
	}
	pb := proto.Clone(t.pb).(*pubsubpb.Topic)
	in := proto.Clone(req.Topic).(*pubsubpb.Topic)
	schema := false
	for _, path := range req.UpdateMask.Paths {
		if err := applyMask(pb, in, path, "UpdateTopicRequest", topicMaskRoots); err != nil {
			return nil, err
		}
		schema = schema || strings.HasPrefix(path, "schema_settings")
	}
	if schema {
		if err := st.checkSchemaSettings(pb.SchemaSettings); err != nil {
			return nil, err
		}
	}
	t.pb = pb
	return proto.Clone(pb).(*pubsubpb.Topic), nil
}

func (p *publisherService) ListTopics(_ context.Context, req *pubsubpb.ListTopicsRequest) (*pubsubpb.ListTopicsResponse, error) {
	if err := checkProject(req.Project); err != nil {
		return nil, err
	}
	p.st.mu.RLock()
	defer p.st.mu.RUnlock()
	var names []string
	for name := range p.st.topics {
		if project(name) == req.Project {
			names = append(names, name)
		}
	}
	page, next, err := paginate(names, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	resp := &pubsubpb.ListTopicsResponse{NextPageToken: next}
	for _, name := range page {
		resp.Topics = append(resp.Topics, proto.Clone(p.st.topics[name].pb).(*pubsubpb.Topic))
	}
	return resp, nil
}

func (p *publisherService) ListTopicSubscriptions(_ context.Context, req *pubsubpb.ListTopicSubscriptionsRequest) (*pubsubpb.ListTopicSubscriptionsResponse, error) {
	if err := checkName(req.Topic, "topics"); err != nil {
		return nil, err
	}
	p.st.mu.RLock()
	defer p.st.mu.RUnlock()
	t := p.st.topics[req.Topic]
	if t == nil {
		return nil, notFound("Topic", req.Topic)
	}
	page, next, err := paginate(slices.Collect(maps.Keys(t.subs)), req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	return &pubsubpb.ListTopicSubscriptionsResponse{Subscriptions: page, NextPageToken: next}, nil
}

func (p *publisherService) ListTopicSnapshots(_ context.Context, req *pubsubpb.ListTopicSnapshotsRequest) (*pubsubpb.ListTopicSnapshotsResponse, error) {
	if err := checkName(req.Topic, "topics"); err != nil {
		return nil, err
	}
	p.st.mu.RLock()
	defer p.st.mu.RUnlock()
	t := p.st.topics[req.Topic]
	if t == nil {
		return nil, notFound("Topic", req.Topic)
	}
	page, next, err := paginate(slices.Collect(maps.Keys(t.snapshots)), req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	return &pubsubpb.ListTopicSnapshotsResponse{Snapshots: page, NextPageToken: next}, nil
}

// DeleteTopic removes the topic; its subscriptions stay, detached (their
// topic reads "_deleted-topic_"), as in the service.
func (p *publisherService) DeleteTopic(_ context.Context, req *pubsubpb.DeleteTopicRequest) (*emptypb.Empty, error) {
	if err := checkName(req.Topic, "topics"); err != nil {
		return nil, err
	}
	st := p.st
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.topics[req.Topic]
	if t == nil {
		return nil, notFound("Topic", req.Topic)
	}
	delete(st.topics, req.Topic)
	st.policies.forget(req.Topic)
	for _, s := range t.subs {
		s.mu.Lock()
		s.pb.Topic = "_deleted-topic_"
		s.mu.Unlock()
	}
	for _, sn := range t.snapshots {
		sn.topic = "_deleted-topic_"
	}
	return &emptypb.Empty{}, nil
}

func (p *publisherService) DetachSubscription(_ context.Context, req *pubsubpb.DetachSubscriptionRequest) (*pubsubpb.DetachSubscriptionResponse, error) {
	if err := checkName(req.Subscription, "subscriptions"); err != nil {
		return nil, err
	}
	st := p.st
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.subs[req.Subscription]
	if s == nil {
		return nil, notFound("Subscription", req.Subscription)
	}
	s.mu.Lock()
	if t := st.topics[s.pb.Topic]; t != nil {
		delete(t.subs, s.name)
	}
	s.pb.Detached = true
	s.mu.Unlock()
	return &pubsubpb.DetachSubscriptionResponse{}, nil
}

// paginate pages sorted names; the page token is the last name returned.
func paginate(names []string, size int32, token string) (page []string, next string, err error) {
	sort.Strings(names)
	start := 0
	if token != "" {
		start = sort.SearchStrings(names, token)
		if start < len(names) && names[start] == token {
			start++
		}
	}
	if size <= 0 || size > 1000 {
		size = 1000
	}
	end := min(start+int(size), len(names))
	if end < len(names) {
		next = names[end-1]
	}
	return names[start:end], next, nil
}
