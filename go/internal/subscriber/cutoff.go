package subscriber

import "github.com/pubsub-go/pubsub-go/go/internal/wire"

// publishCutoff applies Config.ArrivalCutoffUs, an AvailableNow query's
// start: messages published after it are not that run's. They are dropped
// where they arrive, before the reservoir holds them, so they never reach
// a batch, flow control, the lease keeper or the quiet clock (a live
// publisher must not keep such a query from ever seeing its backlog end).
//
// Dropped means released, not nacked: nothing extends their lease, so they
// come back after the deadline the stream delivered them with (the
// prefetch lease, 10 s), to the next run or to this one's streams, which
// drop them again; a nack would bounce them straight back into this run's
// streams as a nack storm.
type publishCutoff struct {
	us int64 // publish time in µs since the epoch; 0: no cut-off
}

// late reports whether m was published after the cut-off, compared at the
// microseconds of the publish_time column. A message without a publish
// time (which Pub/Sub always sets) is kept: there is nothing to judge by.
func (c publishCutoff) late(m *wire.Message) bool {
	return c.us != 0 && m.HasPublishTime && m.PublishSeconds*1_000_000+int64(m.PublishNanos)/1_000 > c.us
}

// drop removes the late messages from msgs in place, keeping the order of
// the rest, and returns the rest, how many were late and their size.
func (c publishCutoff) drop(msgs []wire.Message) (kept []wire.Message, late, lateBytes int64) {
	if c.us == 0 {
		return msgs, 0, 0
	}
	n := 0
	for i := range msgs {
		m := &msgs[i]
		if c.late(m) {
			late++
			lateBytes += m.Size()
			continue
		}
		if n != i {
			msgs[n] = *m
		}
		n++
	}
	return msgs[:n], late, lateBytes
}
