package main

import (
	"sync"
	"sync/atomic"
	"time"
)

// leaseTable maps lease ids (the first half of every ack id) to leases, so
// acks arriving on any stream or RPC find the lease that delivered them.
type leaseTable struct {
	next atomic.Uint64
	mu   sync.RWMutex
	m    map[uint64]*lease
}

func newLeaseTable() *leaseTable {
	return &leaseTable{m: make(map[uint64]*lease)}
}

func (t *leaseTable) open(sub *subscription, size, maxMsgs, maxBytes int64, ackDeadline time.Duration) *lease {
	l := newLease(t.next.Add(1), sub, size, maxMsgs, maxBytes, ackDeadline)
	t.mu.Lock()
	t.m[l.id] = l
	t.mu.Unlock()
	return l
}

func (t *leaseTable) get(id uint64) *lease {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[id]
}

func (t *leaseTable) all() []*lease {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ls := make([]*lease, 0, len(t.m))
	for _, l := range t.m {
		ls = append(ls, l)
	}
	return ls
}

// reap expires overdue deliveries, requeueing them on their subscriptions,
// and forgets closed leases with nothing outstanding. It returns how many
// deliveries expired.
func (t *leaseTable) reap(now time.Time) (expired int) {
	for _, l := range t.all() {
		requeue := l.expire(now)
		expired += len(requeue)
		l.sub.requeue(requeue)
		if out, _, closed := l.state(); closed && out == 0 {
			t.mu.Lock()
			delete(t.m, l.id)
			t.mu.Unlock()
		}
	}
	return expired
}

// outstanding sums what all leases have outstanding.
func (t *leaseTable) outstanding() (n int64) {
	for _, l := range t.all() {
		out, _, _ := l.state()
		n += out
	}
	return n
}
