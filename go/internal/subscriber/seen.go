package subscriber

import (
	"sync"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// seenSet remembers the most recent message ids received, to count
// redeliveries when the subscription has no dead-letter policy (then the
// server's delivery attempt is always 0). Its memory is bounded: past
// capacity the oldest ids are forgotten.
type seenSet struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string
	next int
}

func newSeenSet(capacity int) *seenSet {
	return &seenSet{ids: make(map[string]struct{}, capacity), ring: make([]string, capacity)}
}

// add records id and reports whether it was already there.
func (s *seenSet) add(id string) bool {
	if id == "" {
		return false // "" marks a free ring slot
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return true
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.ids, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.ids[id] = struct{}{}
	return false
}

// redelivered reports whether m was delivered before: the server says so
// (with a dead-letter policy), or this subscriber has seen its id.
func (s *seenSet) redelivered(m *pb.ReceivedMessage) bool {
	seen := s.add(m.GetMessage().GetMessageId())
	return seen || m.GetDeliveryAttempt() > 1
}
