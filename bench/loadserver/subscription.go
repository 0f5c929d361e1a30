package main

import (
	"sync"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// subscription is the delivery state of one subscription: a synthetic
// message sequence (optionally finite) plus a queue of nacked and expired
// messages, which go out before new ones.
type subscription struct {
	name  string
	info  *pubsubpb.Subscription // as created; never mutated
	props *pubsubpb.StreamingPullResponse_SubscriptionProperties
	limit uint64 // total new messages; 0: unlimited
	pull  *lease // leases messages handed out by unary Pull

	gone chan struct{} // closed when the subscription is deleted

	mu        sync.Mutex
	next      uint64    // number of the next new message
	redeliver []pending // FIFO
	avail     chan struct{}
}

func newSubscription(info *pubsubpb.Subscription, limit uint64) *subscription {
	return &subscription{
		name: info.GetName(),
		info: info,
		props: &pubsubpb.StreamingPullResponse_SubscriptionProperties{
			MessageOrderingEnabled:     info.GetEnableMessageOrdering(),
			ExactlyOnceDeliveryEnabled: false,
		},
		limit: limit,
		gone:  make(chan struct{}),
		avail: make(chan struct{}),
	}
}

// claim appends up to k messages to dst: redeliveries first, then new ones.
// It also returns a channel that is closed when messages are requeued, so a
// caller that got nothing can wait without missing a wake-up.
func (s *subscription) claim(dst []pending, k int) ([]pending, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := min(k, len(s.redeliver))
	dst = append(dst, s.redeliver[:r]...)
	s.redeliver = s.redeliver[r:]
	if len(s.redeliver) == 0 {
		s.redeliver = nil // let the backing array go
	}
	k -= r
	if s.limit > 0 {
		k = int(min(uint64(k), s.limit-s.next))
	}
	for range k {
		dst = append(dst, pending{msg: s.next, attempt: 1})
		s.next++
	}
	return dst, s.avail
}

// requeue queues ps for redelivery and wakes every waiting sender.
func (s *subscription) requeue(ps []pending) {
	if len(ps) == 0 {
		return
	}
	s.mu.Lock()
	s.redeliver = append(s.redeliver, ps...)
	close(s.avail)
	s.avail = make(chan struct{})
	s.mu.Unlock()
}
