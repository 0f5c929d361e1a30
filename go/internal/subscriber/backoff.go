package subscriber

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is capped exponential backoff with jitter, for stream reconnects
// and Open retries.
type backoff struct {
	initial, max time.Duration
	factor       float64
}

// delay is the pause before retry number n (0 for the first retry): the
// capped exponential value with its lower half randomized, so many
// subscribers failing together do not reconnect in lockstep.
func (b backoff) delay(n int) time.Duration {
	d := float64(b.initial)
	for i := 0; i < n && d < float64(b.max); i++ {
		d *= b.factor
	}
	d = min(d, float64(b.max))
	half := d / 2
	return time.Duration(half + rand.Float64()*half)
}

// sleep waits d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
