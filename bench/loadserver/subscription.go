package main

import (
	"math"
	"sync"
	"time"

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

	// rate > 0 paces new messages (--rate): message n becomes available at
	// born + (n+1)/rate, and that is its publish time, so a reader that
	// falls behind sees the backlog's age in publish_time as with the real
	// service. born is the first StreamingPull's first claim (a reader's
	// start-up is not backlog). Only StreamingPull honours it (claimPaced).
	rate float64
	born time.Time

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
	return s.claimLocked(dst, k, math.MaxUint64), s.avail
}

// claimLocked claims up to k messages, of them at most fresh new ones.
func (s *subscription) claimLocked(dst []pending, k int, fresh uint64) []pending {
	r := min(k, len(s.redeliver))
	dst = append(dst, s.redeliver[:r]...)
	s.redeliver = s.redeliver[r:]
	if len(s.redeliver) == 0 {
		s.redeliver = nil // let the backing array go
	}
	n := min(uint64(k-r), fresh)
	if s.limit > 0 {
		n = min(n, s.limit-s.next)
	}
	for range n {
		dst = append(dst, pending{msg: s.next, attempt: 1})
		s.next++
	}
	return dst
}

// claimPaced is claim for StreamingPull under --rate: new messages only
// once they are available (availableAt is then each one's publish time,
// redeliveries included); wait > 0 is how long until the next one when
// nothing was claimed.
func (s *subscription) claimPaced(dst []pending, k int, now time.Time) (ps []pending, avail <-chan struct{}, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rate <= 0 {
		return s.claimLocked(dst, k, math.MaxUint64), s.avail, 0
	}
	if s.born.IsZero() {
		s.born = now
	}
	ready := uint64(max(0, now.Sub(s.born).Seconds()*s.rate))
	fresh := uint64(0)
	if ready > s.next {
		fresh = ready - s.next
	}
	ps = s.claimLocked(dst, k, fresh)
	if len(ps) == 0 && (s.limit == 0 || s.next < s.limit) {
		wait = max(s.availableAt(s.next).Sub(now), 50*time.Microsecond)
	}
	return ps, s.avail, wait
}

// availableAt is when new message n becomes available under --rate.
func (s *subscription) availableAt(n uint64) time.Time {
	return s.born.Add(time.Duration(float64(n+1) / s.rate * float64(time.Second)))
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
