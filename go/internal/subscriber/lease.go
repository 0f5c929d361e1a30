package subscriber

import (
	"context"
	"time"
)

// leaseLoop keeps every held message from being redelivered while this
// subscriber lives: each tick it extends the messages whose deadline is
// within half of their lease, and gives up on messages held longer than
// the maximum extension (the server will redeliver them).
//
// Two leases: a message handed out (a task is turning it into rows) is
// extended to the ack deadline; one only prefetched (buffered, no caller
// has it) to the short prefetch lease. Nothing extends either once the
// process dies, so a dead executor's prefetch, possibly a whole flow-control
// allowance kept warm between tasks, is back within the prefetch lease
// rather than after a long ackDeadlineSeconds.
//
// It ends when end is closed (Close), after the extension it is making;
// cancelling ctx cancels that extension too.
func (s *Subscriber) leaseLoop(ctx context.Context, end <-chan struct{}) {
	t := time.NewTicker(s.set.leaseTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-end:
			return
		case <-t.C:
			if isClosed(end) { // both were ready
				return
			}
		}
		prefetched, handed := s.res.due(time.Now(), s.set.prefetchLease, s.set.ackDeadline, s.set.maxExtension)
		s.extend(ctx, prefetched, s.set.prefetchLease)
		s.extend(ctx, handed, s.set.ackDeadline)
	}
}

func (s *Subscriber) extend(ctx context.Context, ids []string, lease time.Duration) {
	if len(ids) == 0 {
		return
	}
	// A failed extension is not fatal: the messages come back after
	// their deadline and are counted as redeliveries.
	n, _ := s.acker.modack(ctx, ids, int32(lease/time.Second))
	s.stats.countModack(n, &s.stats.extended)
}

// due returns the ack ids whose lease must be extended now, prefetched and
// handed out apart, and marks them extended by their lease. Messages held
// for maxExtension or longer are forgotten instead.
func (r *reservoir) due(now time.Time, prefetchLease, deadline, maxExtension time.Duration) (prefetched, handed []string) {
	var expired int
	var expiredBytes int64
	at := r.stamp(now)
	r.mu.Lock()
	r.held.each(func(e *entry) {
		if time.Duration(at-e.received) >= maxExtension {
			expired++
			expiredBytes += e.size
			r.held.forget(e)
			return
		}
		lease := prefetchLease
		if e.handed {
			lease = deadline
		}
		if time.Duration(e.expires-at) <= lease/2 {
			e.expires = at + int64(lease)
			if e.handed {
				handed = append(handed, e.ackID)
			} else {
				prefetched = append(prefetched, e.ackID)
			}
		}
	})
	r.mu.Unlock()
	r.fc.release(expired, expiredBytes)
	return prefetched, handed
}
