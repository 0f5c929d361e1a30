package subscriber

import (
	"sync"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// entry is one held message: received and not yet acked, nacked, released
// or expired.
type entry struct {
	ackID     string
	msg       *pb.ReceivedMessage // nil once handed out: the batch has the data
	size      int64
	received  time.Time
	expires   time.Time // the server's deadline for it, as far as we know
	handedOut bool
	gone      bool // no longer held; a queued entry is skipped
}

// reservoir holds received messages: a queue of those not yet handed out,
// in arrival order, and an index by ack id of every held message, handed
// out or not, for lease extension and for ack/nack/release.
type reservoir struct {
	fc *flowController

	mu       sync.Mutex
	queue    []*entry // buffered, arrival order; may contain gone entries
	buffered int      // live entries in queue
	held     map[string]*entry
	closed   bool
	err      error // permanent failure, reported by take

	arrived signal // messages arrived, or closed, or failed
}

func newReservoir(fc *flowController) *reservoir {
	return &reservoir{fc: fc, held: map[string]*entry{}}
}

// add buffers received messages; sizes[i] is msgs[i]'s size for flow
// control. deadline is the ack deadline they were delivered with.
func (r *reservoir) add(msgs []*pb.ReceivedMessage, sizes []int64, now time.Time, deadline time.Duration) {
	var total int64
	// Also after close: Close drains (and nacks) what arrived until the
	// streams stopped.
	slab := make([]entry, len(msgs)) // one allocation per response
	r.mu.Lock()
	for i, m := range msgs {
		e := &slab[i]
		*e = entry{ackID: m.GetAckId(), msg: m, size: sizes[i], received: now, expires: now.Add(deadline)}
		r.queue = append(r.queue, e)
		r.held[e.ackID] = e
		total += e.size
	}
	r.buffered += len(msgs)
	r.fc.add(len(msgs), total)
	r.mu.Unlock()
	r.arrived.broadcast()
}

// take hands out up to max buffered messages in arrival order. Unless
// partial, it takes nothing until max are buffered and returns a channel
// to wait on instead. It fails once the reservoir is closed or failed.
func (r *reservoir) take(max int, partial bool) ([]*pb.ReceivedMessage, <-chan struct{}, error) {
	wake := r.arrived.wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, errClosed
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	if r.buffered < max && !partial {
		return nil, wake, nil
	}
	n := min(max, r.buffered)
	msgs := make([]*pb.ReceivedMessage, 0, n)
	for len(msgs) < n {
		e := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		if e.gone {
			continue
		}
		e.handedOut = true
		msgs = append(msgs, e.msg)
		e.msg = nil
	}
	r.buffered -= n
	if r.buffered == 0 {
		// Drop gone entries left at the tail, so the queue's memory does
		// not grow with messages acked before they were handed out.
		clear(r.queue)
		r.queue = r.queue[:0]
	}
	return msgs, nil, nil
}

// remove stops holding the given ack ids (acked, nacked or released).
// Unknown ids are ignored: they may belong to another process.
func (r *reservoir) remove(ids []string) {
	var n int
	var bytes int64
	r.mu.Lock()
	for _, id := range ids {
		if e, ok := r.held[id]; ok {
			n++
			bytes += e.size
			r.forget(e)
		}
	}
	r.mu.Unlock()
	r.fc.release(n, bytes)
}

// forget drops e from the index; the caller holds mu and releases flow
// control.
func (r *reservoir) forget(e *entry) {
	delete(r.held, e.ackID)
	e.gone = true
	e.msg = nil
	if !e.handedOut {
		r.buffered--
	}
}

// touch records a deadline set by the user for held ids, so the lease
// does not extend them earlier than needed.
func (r *reservoir) touch(ids []string, expires time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if e, ok := r.held[id]; ok {
			e.expires = expires
		}
	}
}

// fail records a permanent error: every later take returns it.
func (r *reservoir) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.arrived.broadcast()
}

// failure is the permanent error, if any.
func (r *reservoir) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// close makes every later take fail and wakes the waiting ones.
func (r *reservoir) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.arrived.broadcast()
}

// drain forgets every held message and returns the ack ids of those never
// handed out, in arrival order, for Close to nack.
func (r *reservoir) drain() []string {
	r.mu.Lock()
	ids := make([]string, 0, r.buffered)
	for _, e := range r.queue {
		if !e.gone {
			ids = append(ids, e.ackID)
		}
	}
	var bytes int64
	n := len(r.held)
	for _, e := range r.held {
		bytes += e.size
		r.forget(e)
	}
	r.queue = nil
	r.mu.Unlock()
	r.fc.release(n, bytes)
	return ids
}

// len is the number of held and of buffered messages.
func (r *reservoir) len() (held, buffered int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held), r.buffered
}
