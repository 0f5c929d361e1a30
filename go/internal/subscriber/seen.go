package subscriber

import (
	"hash/maphash"
	"sync"
	"unsafe"

	"github.com/pubsub-go/pubsub-go/go/internal/cachehint"
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

// add records id and reports whether it was there already (an empty id
// never is): one message at a time, what redeliveries does for a response.
func (s *seenSet) add(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.check(s.hash(id))
}

// hash is id's key in the table: never 0, which marks an empty slot.
func (s *seenSet) hash(id []byte) uint64 {
	return maphash.Bytes(s.seed, id) | 1
}

// check records hash h and reports whether it was there already.
func (s *seenSet) check(h uint64) bool {
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
//
// It runs after the whole response was parsed, so each message's id (next
// to the following message's start) has left the L2 cache, and its slot is
// a random line of a 1 MiB table: two misses per message, ~1.2% of a Spark
// run's CPU. A three-stage pipeline hides them: the id of message i+2*seenAhead
// is loaded into cache (cachehint), the slot of message i+seenAhead hashed and loaded,
// message i checked (go test -bench DeliverCold, whose responses do not fit
// in cache, measures it).
func (s *seenSet) redeliveries(msgs []wire.Message) int64 {
	var n int64
	var ring [seenAhead]uint64 // hashes of the next seenAhead messages; 0: empty id
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range min(2*seenAhead, len(msgs)) {
		warmID(msgs[i].MessageID)
	}
	for i := range min(seenAhead, len(msgs)) {
		ring[i] = s.hashAndWarm(msgs[i].MessageID)
	}
	for i := range msgs {
		h := ring[i%seenAhead]
		if j := i + seenAhead; j < len(msgs) {
			ring[i%seenAhead] = s.hashAndWarm(msgs[j].MessageID)
			if j += seenAhead; j < len(msgs) {
				warmID(msgs[j].MessageID)
			}
		}
		if (h != 0 && s.check(h)) || msgs[i].DeliveryAttempt > 1 {
			n++
		}
	}
	return n
}

// seenAhead: a message's check takes a few ns once its lines are cached, so
// a miss (~100 ns) needs several messages of lead; eight keep the ring and
// the lines in flight small.
const seenAhead = 8

func warmID(id []byte) {
	if len(id) > 0 {
		cachehint.Line(&id[0], 0)
	}
}

// hashAndWarm is id's hash (0 for an empty id, which is never counted),
// after asking for its slot's line.
func (s *seenSet) hashAndWarm(id []byte) uint64 {
	if len(id) == 0 {
		return 0
	}
	h := s.hash(id)
	cachehint.Line((*byte)(unsafe.Pointer(&s.slots[(h>>1)&s.mask])), 0)
	return h
}
