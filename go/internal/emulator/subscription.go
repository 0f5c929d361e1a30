package emulator

import (
	"sort"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// entryState is where a message stands in one subscription.
type entryState uint8

const (
	ready   entryState = iota // waiting to be delivered (or, under ordering, in its key's queue)
	leased                    // delivered, its ack deadline running
	backoff                   // nacked or expired, waiting out the retry policy
	acked                     // done (kept only for seek when retain_acked_messages)
	dropped                   // gone: past retention, seek, dead-lettered or the subscription deleted
)

// entry is one message in one subscription.
type entry struct {
	msg      *message
	seq      uint64 // arrival order in the subscription
	gen      uint32 // deliveries so far; part of the ack id, so a redelivery's ack id differs
	state    entryState
	deadline time.Time
	owner    *consumer
}

// consumer is a StreamingPull stream (or a Pull call) and its flow control:
// the messages and bytes delivered to it and not yet acked, nacked or expired.
type consumer struct {
	maxMsgs, maxBytes int64 // 0: no limit
	outMsgs, outBytes int64
	ackDeadline       time.Duration
	wake              chan struct{}
}

func newConsumer(maxMsgs, maxBytes int64, ackDeadline time.Duration) *consumer {
	return &consumer{maxMsgs: maxMsgs, maxBytes: maxBytes, ackDeadline: ackDeadline, wake: make(chan struct{}, 1)}
}

func (c *consumer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// keyState is an ordering key's delivery under message ordering: its
// messages wait here, in publish order, and the key (not each message)
// takes a place in the ready queue when none of it is out, so a key's
// messages go out in order whatever the order they became ready in (a
// nacked or expired message comes back ahead of the later ones).
type keyState struct {
	name        string
	outstanding int      // delivered and not yet acked, nacked or expired
	pending     []*entry // ready to go (some may since be acked or dropped), in seq order
	queued      bool     // the key has its place in the ready queue
}

// insert adds e to the key's pending messages in seq order (new messages
// append; a redelivery goes back ahead of later ones).
func (ks *keyState) insert(e *entry) {
	n := len(ks.pending)
	if n == 0 || ks.pending[n-1].seq < e.seq {
		ks.pending = append(ks.pending, e)
		return
	}
	i := sort.Search(n, func(i int) bool { return ks.pending[i].seq > e.seq })
	ks.pending = append(ks.pending, nil)
	copy(ks.pending[i+1:], ks.pending[i:])
	ks.pending[i] = e
}

// head is the key's next message to deliver, nil if none (entries acked
// or dropped while they waited are let go here).
func (ks *keyState) head() *entry {
	for len(ks.pending) > 0 {
		if e := ks.pending[0]; e.state == ready {
			return e
		}
		ks.pending[0] = nil
		ks.pending = ks.pending[1:]
	}
	return nil
}

// readyItem is a place in the ready queue: a message, or (under message
// ordering, for a keyed message) its key, whose messages go out in order
// from there.
type readyItem struct {
	e  *entry
	ks *keyState
}

// settings are a subscription's delivery settings, from its resource.
type settings struct {
	ackDeadline   time.Duration
	ordered       bool
	exactlyOnce   bool
	filter        filterExpr
	deadLetter    string // topic
	maxAttempts   uint32
	retryMin      time.Duration
	retryMax      time.Duration
	retry         bool
	retainAcked   bool
	retention     time.Duration
	topicDetached bool
}

// subscription holds its messages and delivers them. mu guards it all.
type subscription struct {
	id   uint64
	name string
	st   *state

	mu        sync.Mutex
	pb        *pubsubpb.Subscription
	set       settings
	seq       uint64
	live      map[uint64]*entry // every entry not acked nor dropped
	log       deque[*entry]     // retained entries in arrival order (seek, retention)
	stale     int               // acked or dropped entries still in log
	readyQ    deque[readyItem]
	keys      map[string]*keyState
	timers    timerHeap
	consumers map[*consumer]struct{}
	deleted   bool
	gone      chan struct{}
	kick      chan struct{}
	outbox    []deadLettered // to publish once mu is released
}

func newSubscription(st *state, pb *pubsubpb.Subscription, set settings) *subscription {
	s := &subscription{
		id: st.subIDs.Add(1), name: pb.Name, st: st, pb: pb, set: set,
		live: map[uint64]*entry{}, keys: map[string]*keyState{}, consumers: map[*consumer]struct{}{},
		gone: make(chan struct{}), kick: make(chan struct{}, 1),
	}
	go s.reap()
	return s
}

// add appends newly published messages (the caller holds a reference on
// each for this subscription; messages the filter rejects are released:
// the service acknowledges them at once).
func (s *subscription) add(msgs []*message) {
	s.mu.Lock()
	if s.deleted {
		s.mu.Unlock()
		for _, m := range msgs {
			m.release()
		}
		return
	}
	for _, m := range msgs {
		if s.set.filter != nil && !s.set.filter.match(m.pb.Attributes) {
			m.release()
			continue
		}
		s.addEntry(m)
	}
	s.notify()
	s.mu.Unlock()
}

func (s *subscription) addEntry(m *message) {
	s.seq++
	e := &entry{msg: m, seq: s.seq}
	s.live[e.seq] = e
	s.log.pushBack(e)
	s.makeReady(e)
}

// makeReady queues e for delivery; under message ordering a keyed message
// joins its key, which is queued when none of the key is out.
func (s *subscription) makeReady(e *entry) {
	e.state = ready
	e.owner = nil
	if k := e.msg.pb.OrderingKey; s.set.ordered && k != "" {
		ks := s.keys[k]
		if ks == nil {
			ks = &keyState{name: k}
			s.keys[k] = ks
		}
		ks.insert(e)
		s.queueKey(ks)
		return
	}
	s.readyQ.pushBack(readyItem{e: e})
}

// queueKey gives ks a place in the ready queue if it has messages waiting
// and none out.
func (s *subscription) queueKey(ks *keyState) {
	if ks.outstanding == 0 && !ks.queued && len(ks.pending) > 0 {
		ks.queued = true
		s.readyQ.pushBack(readyItem{ks: ks})
	}
}

// keyReleased is called when one of k's messages is no longer out; the
// last one lets the key's waiting messages go (in order, from its place
// at the back of the ready queue).
func (s *subscription) keyReleased(k string) {
	ks := s.keys[k]
	if ks == nil {
		return
	}
	ks.outstanding--
	if ks.outstanding > 0 {
		return
	}
	s.queueKey(ks)
	if !ks.queued {
		delete(s.keys, k)
		return
	}
	s.notify()
}

func (s *subscription) notify() {
	for c := range s.consumers {
		c.signal()
	}
}

// release ends e's lease bookkeeping: its consumer's flow control and its key.
func (s *subscription) release(e *entry) {
	if c := e.owner; c != nil {
		c.outMsgs--
		c.outBytes -= e.msg.size
		c.signal()
		e.owner = nil
	}
	if k := e.msg.pb.OrderingKey; s.set.ordered && k != "" {
		s.keyReleased(k)
	}
}

// ack finishes e.
func (s *subscription) ack(e *entry) {
	if e.state == leased {
		s.release(e)
	}
	e.state = acked
	delete(s.live, e.seq)
	s.stale++
	s.trim(time.Now())
}

// redeliver handles a nack or an expired lease: dead-letter after the
// policy's attempts, else ready again now or after the retry backoff.
func (s *subscription) redeliver(e *entry, now time.Time) {
	if e.state == leased {
		s.release(e)
	}
	if s.set.deadLetter != "" && e.gen >= s.set.maxAttempts {
		s.outbox = append(s.outbox, deadLettered{e.msg.pb, e.gen})
		s.ack(e)
		return
	}
	if s.set.retry {
		d := s.set.retryMin << min(e.gen-1, 30)
		if d > s.set.retryMax || d <= 0 {
			d = s.set.retryMax
		}
		e.state = backoff
		s.pushTimer(timer{at: now.Add(d), kind: backoffEnds, due: []due{{e, e.gen}}})
		return
	}
	s.makeReady(e)
	s.notify()
}

func (s *subscription) pushTimer(t timer) {
	early := len(s.timers) == 0 || t.at.Before(s.timers[0].at)
	s.timers.push(t)
	if early {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// trim drops, from the front of the log, entries that are done (acked and
// not retained) or past retention; when many done entries sit behind an
// unacked one, the log is compacted.
func (s *subscription) trim(now time.Time) {
	horizon := now.Add(-s.set.retention)
	for s.log.len() > 0 {
		e := s.log.front()
		done := e.state == dropped || (e.state == acked && !s.set.retainAcked)
		if !done && !e.msg.pub.Before(horizon) {
			break
		}
		s.log.popFront()
		s.drop(e)
	}
	if !s.set.retainAcked && s.stale > 4096 && s.stale > s.log.len()/2 {
		var kept deque[*entry]
		for i := 0; i < s.log.len(); i++ {
			e := s.log.at(i)
			if e.state == acked || e.state == dropped {
				s.drop(e)
				continue
			}
			kept.pushBack(e)
		}
		s.log = kept
	}
}

// drop lets go of an entry leaving the log.
func (s *subscription) drop(e *entry) {
	if e.state == acked {
		s.stale--
	}
	if e.state == leased {
		s.release(e)
	}
	if e.state != acked && e.state != dropped {
		delete(s.live, e.seq)
	}
	e.state = dropped
	e.msg.release()
	e.msg = nil // a timer may still hold the entry: not its message
}

// takeOutbox returns the dead-lettered messages to publish; call with mu held.
func (s *subscription) takeOutbox() ([]deadLettered, string) {
	out := s.outbox
	s.outbox = nil
	return out, s.set.deadLetter
}

// reap runs lease and backoff timers until the subscription is deleted,
// and trims retention now and then.
func (s *subscription) reap() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	const trimEvery = 10 * time.Second
	lastTrim := time.Now()
	for {
		s.mu.Lock()
		if s.deleted {
			s.mu.Unlock()
			return
		}
		now := time.Now()
		for len(s.timers) > 0 && !s.timers[0].at.After(now) {
			tm := s.timers.pop()
			for _, d := range tm.due {
				e := d.e
				if e.gen != d.gen {
					continue
				}
				switch {
				case tm.kind == leaseEnds && e.state == leased && !e.deadline.After(now):
					s.redeliver(e, now)
				case tm.kind == backoffEnds && e.state == backoff:
					s.makeReady(e)
					s.notify()
				}
			}
		}
		if now.Sub(lastTrim) >= trimEvery {
			s.trim(now)
			lastTrim = now
		}
		wait := trimEvery
		if len(s.timers) > 0 {
			wait = min(wait, s.timers[0].at.Sub(now))
		}
		out, dl := s.takeOutbox()
		s.mu.Unlock()
		s.st.deadLetter(dl, s.name, out)
		t.Reset(wait)
		select {
		case <-t.C:
		case <-s.kick:
			if !t.Stop() {
				<-t.C
			}
		case <-s.gone:
			return
		}
	}
}

// delete ends the subscription: its streams end, its messages are let go.
func (s *subscription) delete() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return
	}
	s.deleted = true
	close(s.gone)
	for s.log.len() > 0 {
		e := s.log.popFront()
		s.drop(e)
	}
	s.outbox = nil
	s.live = map[uint64]*entry{}
	s.readyQ.clear()
	s.keys = map[string]*keyState{}
	s.timers = nil
}
