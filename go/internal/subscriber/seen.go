package subscriber

import (
	"hash/maphash"
	"sync"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// seenSet remembers recently received message ids, to count redeliveries
// when the subscription has no dead-letter policy (then the server's
// delivery attempt is always 0). It is a direct-mapped table of 64-bit
// hashes: one probe per message and fixed memory, at the price of
// forgetting an id early when a newer one lands in its slot (an undercount
// of redeliveries, never an overcount but for a 64-bit hash collision).
// The counter is diagnostics; delivery itself never depends on it.
type seenSet struct {
	seed  maphash.Seed
	mu    sync.Mutex
	slots []uint64 // 0: empty
	mask  uint64
}

// newSeenSet sizes the table for about capacity ids (rounded up to a power
// of two, doubled so that most recent ids keep their slot).
func newSeenSet(capacity int) *seenSet {
	n := uint64(1)
	for n < 2*uint64(capacity) {
		n <<= 1
	}
	return &seenSet{seed: maphash.MakeSeed(), slots: make([]uint64, n), mask: n - 1}
}

// add records id and reports whether it was there already.
func (s *seenSet) add(id []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(id)
}

func (s *seenSet) addLocked(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	h := maphash.Bytes(s.seed, id) | 1 // never 0, which marks an empty slot
	slot := &s.slots[(h>>1)&s.mask]
	if *slot == h {
		return true
	}
	*slot = h
	return false
}

// redeliveries counts the messages of a response delivered before: the
// server says so (with a dead-letter policy), or this subscriber has seen
// the id.
func (s *seenSet) redeliveries(msgs []wire.Message) int64 {
	var n int64
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range msgs {
		if seen := s.addLocked(msgs[i].MessageID); seen || msgs[i].DeliveryAttempt > 1 {
			n++
		}
	}
	return n
}
