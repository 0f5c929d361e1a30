package subscriber

import (
	"context"
	"sync"
	"time"
)

// Pausing: a subscriber kept between tasks (python/pubsub_go/spark/read/
// subscriber_pool.py) ends its streams while it sits unused and opens them
// again when its next task takes it. What it holds stays held, its leases
// extended as before; it only stops receiving.
//
// Why: Spark ends a Python worker whose task it killed (a query stopping)
// with SIGKILL, which no handler sees, so the worker's streams are cut, not
// half-closed. The service redelivers what such a stream held after its
// deadline, but Google's emulator keeps the dead stream and goes on leasing
// new messages to it, which nobody then receives (a query restarted in the
// same application read part of what waited, then nothing). A paused
// subscriber has no stream to lose.

// gate lets sessions run, or holds new ones back while paused.
type gate struct {
	mu     sync.Mutex
	paused bool
	stop   chan struct{} // closed by pause: the sessions running half-close and end
	resume chan struct{} // closed by unpause: held-back streams open sessions again
}

func newGate() *gate {
	return &gate{stop: make(chan struct{}), resume: make(chan struct{})}
}

// enter waits while paused and returns the channel that ends a session
// started now; false if ctx ended or closing was closed first.
func (g *gate) enter(ctx context.Context, closing <-chan struct{}) (<-chan struct{}, bool) {
	for {
		g.mu.Lock()
		paused, stop, resume := g.paused, g.stop, g.resume
		g.mu.Unlock()
		if !paused {
			return stop, true
		}
		select {
		case <-resume:
		case <-ctx.Done():
			return nil, false
		case <-closing:
			return nil, false
		}
	}
}

// set pauses or unpauses; it reports whether that changed anything.
func (g *gate) set(paused bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused == paused {
		return false
	}
	g.paused = paused
	if paused {
		close(g.stop)
	} else {
		g.stop = make(chan struct{})
		close(g.resume)
		g.resume = make(chan struct{})
	}
	return true
}

// Pause half-closes every stream and opens no new session until Resume:
// the subscriber stops receiving and keeps what it holds (leases still
// extended). Streams end as the server ends them, as at Close, but
// nothing waits for that here. Pausing a paused subscriber does nothing.
func (s *Subscriber) Pause() {
	if s.gate.set(true) {
		s.stall.pause(true, time.Now()) // a paused stream is not a stall
	}
}

// Resume opens the streams again after Pause; otherwise it does nothing.
func (s *Subscriber) Resume() {
	if s.gate.set(false) {
		s.stall.pause(false, time.Now())
	}
}
