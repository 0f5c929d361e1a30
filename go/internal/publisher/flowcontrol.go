package publisher

import (
	"context"
	"sync"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// flowController bounds the bytes accepted but not yet acknowledged.
// Waiters are served in FIFO order so a large message is not starved by
// small ones. A single request larger than the bound is admitted when
// nothing else is in flight, so it cannot deadlock.
//
// It differs from the subscriber's (subscriber/flowcontrol.go) because the
// two sides of the bound differ: here the caller's own Publish is what
// adds bytes, so it can be made to wait before anything is accepted
// (blocking, FIFO, bytes only); a subscriber's messages arrive from the
// server whether or not there is room, so its controller never blocks the
// adder, counts messages and bytes, and only tells the streams to stop
// reading until room frees up.
type flowController struct {
	max int64

	mu      sync.Mutex
	used    int64
	peak    int64 // highest used, for tests and diagnostics
	waiters []*fcWaiter
}

type fcWaiter struct {
	n     int64
	ready chan struct{} // closed once the bytes are granted
}

func newFlowController(max int64) *flowController {
	return &flowController{max: max}
}

// acquire blocks until n bytes fit, ctx is done or stop is closed.
func (f *flowController) acquire(ctx context.Context, stop <-chan struct{}, n int64) error {
	f.mu.Lock()
	if len(f.waiters) == 0 && f.fits(n) {
		f.grant(n)
		f.mu.Unlock()
		return nil
	}
	w := &fcWaiter{n: n, ready: make(chan struct{})}
	f.waiters = append(f.waiters, w)
	f.mu.Unlock()

	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = rpc.CtxError(ctx.Err(), "publish: waiting for in-flight bytes to drain (max_in_flight_bytes)")
	case <-stop:
		err = errClosed
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-w.ready: // granted while giving up: hand the bytes back
		f.used -= n
	default:
		for i, x := range f.waiters {
			if x == w {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				break
			}
		}
	}
	f.wake()
	return err
}

// release returns n bytes and admits waiters that now fit.
func (f *flowController) release(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used -= n
	f.wake()
}

func (f *flowController) fits(n int64) bool { return f.used == 0 || f.used+n <= f.max }

func (f *flowController) grant(n int64) {
	f.used += n
	f.peak = max(f.peak, f.used)
}

func (f *flowController) wake() {
	for len(f.waiters) > 0 && f.fits(f.waiters[0].n) {
		w := f.waiters[0]
		f.waiters = f.waiters[1:]
		f.grant(w.n)
		close(w.ready)
	}
}

// stats reports bytes in use, the peak and the number of blocked callers.
func (f *flowController) stats() (used, peak int64, waiting int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used, f.peak, len(f.waiters)
}
