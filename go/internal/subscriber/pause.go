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
	stop   chan struct{}   // closed by pause: the sessions running half-close and end
	resume chan struct{}   // closed by unpause: held-back streams open sessions again
	sent   *sync.WaitGroup // sessions entered since the last unpause whose half-close is not sent yet
}

func newGate() *gate {
	return &gate{stop: make(chan struct{}), resume: make(chan struct{}), sent: new(sync.WaitGroup)}
}

// enter waits while paused and returns the channel that ends a session
// started now, and the function the session calls once its half-close is
// sent (or it ended without one; later calls do nothing); false if ctx
// ended or closing was closed first.
func (g *gate) enter(ctx context.Context, closing <-chan struct{}) (<-chan struct{}, func(), bool) {
	for {
		g.mu.Lock()
		paused, stop, resume, sent := g.paused, g.stop, g.resume, g.sent
		if !paused {
			sent.Add(1) // under mu, so never after pause's Wait began
			g.mu.Unlock()
			var once sync.Once
			return stop, func() { once.Do(sent.Done) }, true
		}
		g.mu.Unlock()
		select {
		case <-resume:
		case <-ctx.Done():
			return nil, nil, false
		case <-closing:
			return nil, nil, false
		}
	}
}

// set pauses or unpauses; it reports whether that changed anything, and
// on a pause the sessions it half-closes, to wait for.
func (g *gate) set(paused bool) (*sync.WaitGroup, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused == paused {
		return nil, false
	}
	g.paused = paused
	if paused {
		close(g.stop)
		return g.sent, true
	}
	g.stop = make(chan struct{})
	close(g.resume)
	g.resume = make(chan struct{})
	g.sent = new(sync.WaitGroup)
	return nil, true
}

// Pause half-closes every stream and opens no new session until Resume:
// the subscriber stops receiving and keeps what it holds (leases still
// extended). It returns once every stream's half-close is sent (within
// drainTimeout): a process killed right after a pause (Spark's SIGKILL of
// a worker keeping this subscriber) cuts no stream that was still about
// to half-close, which on a loaded machine took longer than the caller
// waited. The streams end as the server ends them, as at Close, but
// nothing waits for that here. Pausing a paused subscriber does nothing.
func (s *Subscriber) Pause() {
	sent, changed := s.gate.set(true)
	if !changed {
		return
	}
	s.stall.pause(true, time.Now()) // a paused stream is not a stall
	waitTimeout(sent, s.set.drainTimeout)
}

// Resume opens the streams again after Pause; otherwise it does nothing.
func (s *Subscriber) Resume() {
	if _, changed := s.gate.set(false); changed {
		s.stall.pause(false, time.Now())
	}
}
