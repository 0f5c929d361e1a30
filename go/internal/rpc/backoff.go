package rpc

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff with jitter, shared by stream
// reconnects, Open retries, ack retries and publish retries.
type Backoff struct {
	Initial, Max time.Duration
}

// Delay is the pause before retry number n (0 for the first retry): the
// value Initial*2^n capped at Max, with its lower half randomized, so that
// many clients failing together do not retry in lockstep.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Initial
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// Sleep waits d or until ctx is done, whichever comes first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
