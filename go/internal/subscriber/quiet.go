package subscriber

import (
	"sync/atomic"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// quietClock answers the question an end-of-backlog decision rests on:
// for how long has this subscriber been able to receive (every stream in
// a live session, flow control not holding it back) while nothing
// arrived? Pub/Sub has no end offset, so "no message for long enough
// while able to receive one" is the only evidence a client can gather
// that a subscription's backlog is empty.
//
// A stream that ends may take messages with it: ones the server sent that
// never arrived stay leased to the dead stream until the stream's ack
// deadline passes. So after a stream ends the evidence window starts no
// earlier than one ack deadline later.
//
// Messages published after an AvailableNow query's cut-off never get here
// (publishCutoff drops them first), so they do not count as arrivals.
type quietClock struct {
	opened      time.Time
	ackDeadline time.Duration // of the streams: how long a lost message stays leased
	lastArrival atomic.Int64  // unix nanos of the last counted arrival; 0: none
	lastLoss    atomic.Int64  // unix nanos a stream last ended; 0: never
	liveSince   []atomic.Int64
}

// newQuietClock starts a clock for streams streams, not yet live, and room
// for up to maxStreams (catchup.go): one not started holds nothing back.
func newQuietClock(streams, maxStreams int, ackDeadline time.Duration, now time.Time) *quietClock {
	q := &quietClock{opened: now, ackDeadline: ackDeadline,
		liveSince: make([]atomic.Int64, max(streams, maxStreams))}
	for i := streams; i < len(q.liveSince); i++ {
		q.liveSince[i].Store(now.UnixNano())
	}
	return q
}

// ended records that a stream's session ended (it reconnects).
func (q *quietClock) ended(now time.Time) {
	q.lastLoss.Store(now.UnixNano())
}

// arrived records received messages.
func (q *quietClock) arrived(msgs []wire.Message, now time.Time) {
	if len(msgs) > 0 {
		q.lastArrival.Store(now.UnixNano())
	}
}

// live marks stream i in a session since now (down: zero time).
func (q *quietClock) live(i int, since time.Time) {
	if since.IsZero() {
		q.liveSince[i].Store(0)
		return
	}
	q.liveSince[i].Store(since.UnixNano())
}

// quiet is how long the subscriber has been receiving-capable and silent;
// 0 while a stream is down or flow control is full.
func (q *quietClock) quiet(now time.Time, blocked bool) time.Duration {
	if blocked {
		return 0
	}
	from := q.opened.UnixNano()
	from = max(from, q.lastArrival.Load())
	if loss := q.lastLoss.Load(); loss != 0 {
		from = max(from, loss+int64(q.ackDeadline))
	}
	for i := range q.liveSince {
		s := q.liveSince[i].Load()
		if s == 0 {
			return 0
		}
		from = max(from, s)
	}
	return max(0, time.Duration(now.UnixNano()-from))
}
