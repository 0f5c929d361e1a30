package publisher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/conn"
)

// attemptTimeout bounds one RPC attempt, as the generated client's
// default does, so a silently dead connection is retried rather than
// consuming the whole retry budget.
const attemptTimeout = 60 * time.Second

// backoff yields exponentially growing delays with jitter: each delay is
// drawn from [cur/2, cur], and cur doubles up to max.
type backoff struct {
	cur, max time.Duration
}

func (b *backoff) next() time.Duration {
	d := b.cur/2 + time.Duration(rand.Int64N(int64(b.cur/2)+1))
	b.cur = min(2*b.cur, b.max)
	return d
}

// retryPolicy retries transient failures of one call within a total time.
type retryPolicy struct {
	initial, max, timeout time.Duration
	timeoutKey            string // config key of timeout, named when giving up
}

// do runs call until it succeeds, fails definitively, ctx ends or the
// policy's timeout passes. It returns how many retries it made and the
// last error, rewritten to carry the code name and the attempt count.
func (r retryPolicy) do(ctx context.Context, what string, call func(context.Context) error) (int, error) {
	start := time.Now()
	total, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	bo := backoff{cur: r.initial, max: r.max}
	var last error // the previous failure
	for attempt := 0; ; attempt++ {
		giveUp := func(err error) (int, error) {
			return attempt, describe(err, what, fmt.Sprintf(" (gave up after %d attempts in %v; %s=%d)",
				attempt+1, time.Since(start).Round(time.Millisecond), r.timeoutKey, r.timeout.Milliseconds()))
		}
		actx, acancel := context.WithTimeout(total, attemptTimeout)
		err := call(actx)
		acancel()
		switch {
		case err == nil:
			return attempt, nil
		case ctx.Err() != nil: // the caller gave up (Close): not a publish failure
			return attempt, ctxError(ctx.Err(), what)
		case !conn.Retryable(err):
			return attempt, describe(err, what, "")
		case total.Err() != nil && last != nil:
			// Cut short by our own deadline: the failure before says more.
			return giveUp(last)
		}
		last = err
		d := bo.next()
		if dl, _ := total.Deadline(); total.Err() != nil || time.Until(dl) < d {
			return giveUp(err) // the next attempt would start past the deadline
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-total.Done():
			t.Stop()
			if ctx.Err() != nil {
				return attempt, ctxError(ctx.Err(), what)
			}
			return giveUp(err)
		}
	}
}
