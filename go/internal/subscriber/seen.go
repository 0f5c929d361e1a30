package subscriber

import (
	"hash/maphash"
	"sync"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// seenSet remembers the most recent message ids received, to count
// redeliveries when the subscription has no dead-letter policy (then the
// server's delivery attempt is always 0). Its memory is bounded: past
// capacity the oldest ids are forgotten. Ids are kept as 64-bit hashes:
// no string per message, and a collision only miscounts one redelivery.
type seenSet struct {
	seed maphash.Seed
	mu   sync.Mutex
	ids  map[uint64]struct{}
	ring []uint64
	next int
}

func newSeenSet(capacity int) *seenSet {
	return &seenSet{seed: maphash.MakeSeed(), ids: make(map[uint64]struct{}, capacity), ring: make([]uint64, capacity)}
}

// add records id and reports whether it was already there.
func (s *seenSet) add(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	h := maphash.Bytes(s.seed, id) | 1 // 0 marks a free ring slot
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[h]; ok {
		return true
	}
	if old := s.ring[s.next]; old != 0 {
		delete(s.ids, old)
	}
	s.ring[s.next] = h
	s.next = (s.next + 1) % len(s.ring)
	s.ids[h] = struct{}{}
	return false
}

// redelivered reports whether m was delivered before: the server says so
// (with a dead-letter policy), or this subscriber has seen its id.
func (s *seenSet) redelivered(m *wire.Message) bool {
	seen := s.add(m.MessageID)
	return seen || m.DeliveryAttempt > 1
}
