package main

import (
	"sync"
	"time"
)

// pending is a message waiting to be (re)delivered: its number in the
// subscription's synthetic sequence and the delivery attempt it will be.
type pending struct {
	msg     uint64
	attempt int32
}

// delivery is one message handed out by a lease and not yet settled.
type delivery struct {
	msg      uint64
	deadline int64 // unix nanos at which the lease expires; 0 once settled
	attempt  int32
}

// lease tracks what one stream (or the unary-Pull path of a subscription)
// has outstanding and enforces the client's flow control. Deliveries get
// consecutive sequence numbers and sit in a ring ordered by sequence, so an
// ack is an index computation, not a map operation. The window spans from the
// oldest unsettled delivery to the newest, so a message held (and extended)
// for a long time keeps everything delivered after it in the ring.
type lease struct {
	id       uint64
	sub      *subscription
	size     int64 // flow-control size of every message
	maxMsgs  int64 // 0: unlimited
	maxBytes int64 // 0: unlimited

	wake chan struct{} // capacity 1: poked when credit frees up

	mu          sync.Mutex
	ackDeadline time.Duration
	ring        []delivery // length is a power of two
	start       int        // ring index of sequence first
	first       uint64     // sequence of the oldest delivery in the window
	n           int        // window length, settled entries included
	outstanding int64
	highWater   int64 // most outstanding at any time
	closed      bool  // the stream is gone; no more deliveries
}

func newLease(id uint64, sub *subscription, size, maxMsgs, maxBytes int64, ackDeadline time.Duration) *lease {
	return &lease{
		id: id, sub: sub, size: size,
		maxMsgs: max(maxMsgs, 0), maxBytes: max(maxBytes, 0),
		wake:        make(chan struct{}, 1),
		ackDeadline: ackDeadline,
		ring:        make([]delivery, 1024),
		first:       1, // seq 0 is never issued
	}
}

// credit is how many more messages (at most limit) may be delivered now
// without exceeding the client's limits. Like the real service, one message
// may go out over the byte limit when nothing is outstanding.
func (l *lease) credit(limit int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := int64(limit)
	if l.maxMsgs > 0 {
		k = min(k, l.maxMsgs-l.outstanding)
	}
	if l.maxBytes > 0 {
		byBytes := (l.maxBytes - l.outstanding*l.size) / l.size
		if byBytes < 1 && l.outstanding == 0 {
			byBytes = 1
		}
		k = min(k, byBytes)
	}
	return int(max(k, 0))
}

// record leases ps and returns the sequence number of the first one; the
// others follow consecutively.
func (l *lease) record(ps []pending, now time.Time) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	deadline := now.Add(l.ackDeadline).UnixNano()
	seq := l.first + uint64(l.n)
	for _, p := range ps {
		if l.n == len(l.ring) {
			l.grow()
		}
		l.ring[(l.start+l.n)&(len(l.ring)-1)] = delivery{msg: p.msg, deadline: deadline, attempt: p.attempt}
		l.n++
	}
	l.outstanding += int64(len(ps))
	l.highWater = max(l.highWater, l.outstanding)
	return seq
}

// grow doubles the ring, keeping the window in sequence order.
func (l *lease) grow() {
	ring := make([]delivery, 2*len(l.ring))
	for i := range l.n {
		ring[i] = l.ring[(l.start+i)&(len(l.ring)-1)]
	}
	l.ring, l.start = ring, 0
}

// at returns the live delivery with sequence seq, or nil.
func (l *lease) at(seq uint64) *delivery {
	if seq < l.first || seq-l.first >= uint64(l.n) {
		return nil
	}
	d := &l.ring[(l.start+int(seq-l.first))&(len(l.ring)-1)]
	if d.deadline == 0 {
		return nil
	}
	return d
}

// settleLocked marks d settled and, if asked, queues it for redelivery.
func (l *lease) settleLocked(d *delivery, requeue []pending, redeliver bool) []pending {
	if redeliver {
		requeue = append(requeue, pending{msg: d.msg, attempt: d.attempt + 1})
	}
	d.deadline = 0
	l.outstanding--
	return requeue
}

// trim drops settled deliveries from the front of the window.
func (l *lease) trim() {
	for l.n > 0 && l.ring[l.start].deadline == 0 {
		l.start = (l.start + 1) & (len(l.ring) - 1)
		l.first++
		l.n--
	}
}

// poke wakes the lease's sender (if waiting) because credit freed up.
func (l *lease) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// ack settles the deliveries seqs and returns how many were outstanding.
func (l *lease) ack(seqs []uint64) (hits int) {
	l.mu.Lock()
	for _, s := range seqs {
		if d := l.at(s); d != nil {
			l.settleLocked(d, nil, false)
			hits++
		}
	}
	l.trim()
	l.mu.Unlock()
	if hits > 0 {
		l.poke()
	}
	return hits
}

// modify sets the deadline of seqs to now+seconds; seconds <= 0 is a nack,
// which settles them and returns them for redelivery.
func (l *lease) modify(seqs []uint64, seconds int32, now time.Time) (hits int, requeue []pending) {
	deadline := now.Add(time.Duration(seconds) * time.Second).UnixNano()
	l.mu.Lock()
	for _, s := range seqs {
		d := l.at(s)
		if d == nil {
			continue
		}
		hits++
		if seconds > 0 {
			d.deadline = deadline
		} else {
			requeue = l.settleLocked(d, requeue, true)
		}
	}
	l.trim()
	l.mu.Unlock()
	if len(requeue) > 0 {
		l.poke()
	}
	return hits, requeue
}

// expire settles every delivery whose deadline has passed and returns them
// for redelivery. It scans the whole window: deadlines are not in sequence
// order once modacks extend them.
func (l *lease) expire(now time.Time) (requeue []pending) {
	t := now.UnixNano()
	l.mu.Lock()
	for i := range l.n {
		d := &l.ring[(l.start+i)&(len(l.ring)-1)]
		if d.deadline != 0 && d.deadline < t {
			requeue = l.settleLocked(d, requeue, true)
		}
	}
	l.trim()
	l.mu.Unlock()
	if len(requeue) > 0 {
		l.poke()
	}
	return requeue
}

func (l *lease) setAckDeadline(d time.Duration) {
	l.mu.Lock()
	l.ackDeadline = d
	l.mu.Unlock()
}

func (l *lease) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// state reports the outstanding count, its high-water mark, and whether the
// lease is closed.
func (l *lease) state() (outstanding, highWater int64, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.outstanding, l.highWater, l.closed
}
