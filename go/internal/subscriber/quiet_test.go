package subscriber

import (
	"testing"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

func TestQuietClockCountsOnlyLiveSilentTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newQuietClock(2, 2, 10*time.Second, t0)
	if got := q.quiet(t0.Add(5*time.Second), false); got != 0 {
		t.Fatalf("quiet with no stream live = %v, want 0", got)
	}
	q.live(0, t0.Add(time.Second))
	q.live(1, t0.Add(2*time.Second))
	if got := q.quiet(t0.Add(5*time.Second), false); got != 3*time.Second {
		t.Fatalf("quiet since the last stream went live = %v, want 3s", got)
	}
	if got := q.quiet(t0.Add(5*time.Second), true); got != 0 {
		t.Fatalf("quiet while flow control is full = %v, want 0", got)
	}
	q.arrived([]wire.Message{{HasPublishTime: true, PublishSeconds: 1}}, t0.Add(4*time.Second))
	if got := q.quiet(t0.Add(5*time.Second), false); got != time.Second {
		t.Fatalf("quiet after an arrival = %v, want 1s", got)
	}
	q.live(1, time.Time{}) // a reconnect: no evidence until it is live again
	q.ended(t0.Add(6 * time.Second))
	if got := q.quiet(t0.Add(6*time.Second), false); got != 0 {
		t.Fatalf("quiet with a stream down = %v, want 0", got)
	}
	q.live(1, t0.Add(7*time.Second))
	// What the lost stream held comes back within an ack deadline of its end.
	if got := q.quiet(t0.Add(12*time.Second), false); got != 0 {
		t.Fatalf("quiet within an ack deadline of a lost stream = %v, want 0", got)
	}
	if got := q.quiet(t0.Add(19*time.Second), false); got != 3*time.Second {
		t.Fatalf("quiet 13s after a lost stream (deadline 10s) = %v, want 3s", got)
	}
}
