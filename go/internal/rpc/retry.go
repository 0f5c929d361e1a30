package rpc

import (
	"context"
	"fmt"
	"time"
)

// AttemptTimeout bounds one RPC attempt of a Policy, as the generated
// client's default does, so a silently dead connection is retried rather
// than consuming the whole retry budget.
const AttemptTimeout = 60 * time.Second

// Policy retries transient failures of one call within a total time (the
// publisher's requests). The acker and Open bound attempts instead, with
// the same Backoff.
type Policy struct {
	Backoff
	Timeout    time.Duration
	TimeoutKey string // config key of Timeout, named when giving up
}

// Do runs call until it succeeds, fails definitively, ctx ends or the
// policy's timeout passes. It returns how many retries it made and the
// last error, rewritten to say what failed and, on giving up, the attempts.
func (r Policy) Do(ctx context.Context, what string, call func(context.Context) error) (int, error) {
	start := time.Now()
	total, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	var last error // the previous failure
	for attempt := 0; ; attempt++ {
		giveUp := func(err error) (int, error) {
			return attempt, Describe(err, what, fmt.Sprintf(" (gave up after %d attempts in %v; %s=%d)",
				attempt+1, time.Since(start).Round(time.Millisecond), r.TimeoutKey, r.Timeout.Milliseconds()))
		}
		actx, acancel := context.WithTimeout(total, AttemptTimeout)
		err := call(actx)
		acancel()
		switch {
		case err == nil:
			return attempt, nil
		case ctx.Err() != nil: // the caller gave up (Close): not a failure of the call
			return attempt, CtxError(ctx.Err(), what)
		case !Retryable(err):
			return attempt, Describe(err, what, "")
		case total.Err() != nil && last != nil:
			// Cut short by our own deadline: the failure before says more.
			return giveUp(last)
		}
		last = err
		d := r.Delay(attempt)
		if dl, _ := total.Deadline(); total.Err() != nil || time.Until(dl) < d {
			return giveUp(err) // the next attempt would start past the deadline
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-total.Done():
			t.Stop()
			if ctx.Err() != nil {
				return attempt, CtxError(ctx.Err(), what)
			}
			return giveUp(err)
		}
	}
}
