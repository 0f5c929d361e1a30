package subscriber

import (
	"context"
	"time"
)

// leaseLoop keeps every held message (buffered or handed out) from being
// redelivered: each tick it extends to the ack deadline the messages whose
// deadline is within half of it, and gives up on messages held longer than
// the maximum extension (the server will redeliver them).
func (s *Subscriber) leaseLoop(ctx context.Context) {
	t := time.NewTicker(s.set.leaseTick)
	defer t.Stop()
	secs := int32(s.set.ackDeadline / time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids := s.res.due(time.Now(), s.set.ackDeadline, s.set.maxExtension)
		if len(ids) == 0 {
			continue
		}
		// A failed extension is not fatal: the messages come back after
		// their deadline and are counted as redeliveries.
		n, _ := s.acker.modack(ctx, ids, secs)
		s.stats.countModack(n, &s.stats.extended)
	}
}

// due returns the ack ids whose lease must be extended now, and marks them
// extended by deadline. Messages held for maxExtension or longer are
// forgotten instead.
func (r *reservoir) due(now time.Time, deadline, maxExtension time.Duration) []string {
	var ids []string
	var expired int
	var expiredBytes int64
	r.mu.Lock()
	for _, e := range r.held {
		if now.Sub(e.received) >= maxExtension {
			expired++
			expiredBytes += e.size
			r.forget(e)
			continue
		}
		if e.expires.Sub(now) <= deadline/2 {
			ids = append(ids, e.ackID)
			e.expires = now.Add(deadline)
		}
	}
	r.mu.Unlock()
	r.fc.release(expired, expiredBytes)
	return ids
}
