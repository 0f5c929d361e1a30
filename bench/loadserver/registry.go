package main

import (
	"strings"
	"sync"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

const defaultAckDeadlineSeconds = 10

// registry holds topics and subscriptions in memory.
type registry struct {
	limit      uint64 // new messages per subscription
	autoCreate bool
	ordered    bool                // auto-created subscriptions enable ordering
	opened     func(*subscription) // sets up a new subscription's pull lease

	mu     sync.RWMutex
	topics map[string]*pubsubpb.Topic
	subs   map[string]*subscription
}

func newRegistry(limit uint64, autoCreate, ordered bool, opened func(*subscription)) *registry {
	return &registry{
		limit: limit, autoCreate: autoCreate, ordered: ordered, opened: opened,
		topics: make(map[string]*pubsubpb.Topic),
		subs:   make(map[string]*subscription),
	}
}

// checkName accepts "projects/P/<kind>/N".
func checkName(name, kind string) error {
	parts := strings.Split(name, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[1] == "" || parts[2] != kind || parts[3] == "" {
		return status.Errorf(codes.InvalidArgument, "invalid resource name %q: want projects/PROJECT/%s/NAME", name, kind)
	}
	return nil
}

func (r *registry) createTopic(t *pubsubpb.Topic) (*pubsubpb.Topic, error) {
	if err := checkName(t.GetName(), "topics"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.topics[t.Name]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "topic %s already exists", t.Name)
	}
	t = proto.Clone(t).(*pubsubpb.Topic)
	t.State = pubsubpb.Topic_ACTIVE
	r.topics[t.Name] = t
	return t, nil
}

// topic returns the named topic, creating it if auto-create is on.
func (r *registry) topic(name string) (*pubsubpb.Topic, error) {
	if err := checkName(name, "topics"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	t, ok := r.topics[name]
	r.mu.RUnlock()
	if ok {
		return t, nil
	}
	if !r.autoCreate {
		return nil, status.Errorf(codes.NotFound, "topic %s not found", name)
	}
	t, err := r.createTopic(&pubsubpb.Topic{Name: name})
	if status.Code(err) == codes.AlreadyExists {
		return r.topic(name) // lost a race with another creator
	}
	return t, err
}

// getTopic looks a topic up without auto-creating it.
func (r *registry) getTopic(name string) (*pubsubpb.Topic, error) {
	if err := checkName(name, "topics"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.topics[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "topic %s not found", name)
	}
	return t, nil
}

func (r *registry) deleteTopic(name string) error {
	if err := checkName(name, "topics"); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.topics[name]; !ok {
		return status.Errorf(codes.NotFound, "topic %s not found", name)
	}
	delete(r.topics, name)
	return nil
}

// createSubscription requires the topic to exist (as the service does),
// unless the subscription is being auto-created (topic "").
func (r *registry) createSubscription(s *pubsubpb.Subscription) (*subscription, error) {
	if err := checkName(s.GetName(), "subscriptions"); err != nil {
		return nil, err
	}
	if s.GetTopic() != "" {
		if _, err := r.getTopic(s.Topic); err != nil {
			return nil, err
		}
	}
	s = proto.Clone(s).(*pubsubpb.Subscription)
	if s.AckDeadlineSeconds == 0 {
		s.AckDeadlineSeconds = defaultAckDeadlineSeconds
	}
	s.State = pubsubpb.Subscription_ACTIVE
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.subs[s.Name]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "subscription %s already exists", s.Name)
	}
	sub := newSubscription(s, r.limit)
	r.opened(sub)
	r.subs[s.Name] = sub
	return sub, nil
}

// subscription returns the named subscription, creating it if auto-create
// is on.
func (r *registry) subscription(name string) (*subscription, error) {
	if err := checkName(name, "subscriptions"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	sub, ok := r.subs[name]
	r.mu.RUnlock()
	if ok {
		return sub, nil
	}
	if !r.autoCreate {
		return nil, status.Errorf(codes.NotFound, "subscription %s not found", name)
	}
	sub, err := r.createSubscription(&pubsubpb.Subscription{Name: name, EnableMessageOrdering: r.ordered})
	if status.Code(err) == codes.AlreadyExists {
		return r.subscription(name)
	}
	return sub, err
}

// getSubscription looks a subscription up without auto-creating it.
func (r *registry) getSubscription(name string) (*subscription, error) {
	if err := checkName(name, "subscriptions"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	sub, ok := r.subs[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "subscription %s not found", name)
	}
	return sub, nil
}

// deleteSubscription removes it and ends its streams with NOT_FOUND.
func (r *registry) deleteSubscription(name string) error {
	if err := checkName(name, "subscriptions"); err != nil {
		return err
	}
	r.mu.Lock()
	sub, ok := r.subs[name]
	delete(r.subs, name)
	r.mu.Unlock()
	if !ok {
		return status.Errorf(codes.NotFound, "subscription %s not found", name)
	}
	close(sub.gone)
	sub.pull.close()
	return nil
}
