package subscriber

import (
	"sync/atomic"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// Catching up: a subscriber whose arriving messages were published more
// than Config.CatchUpLagMs ago is reading a backlog, not live traffic, and
// opens the rest of its Config.CatchUpStreams StreamingPull streams at
// once (a backlog read at a few streams' pace while more are added one by
// one loses the time it takes to add them). A server may pace each stream
// (Google's emulator does), so a backlog is read at the pace of its streams;
// on live traffic extra streams cost latency (figures for both in
// bench/results/emulator_results.md): so the subscriber starts with
// Config.Streams and grows only once it is behind. It does not shrink: streams added for a
// backlog stay until Close (the Spark source closes a grown subscriber once
// its task hands over fresh rows, spark/read/task/run.py).
//
// The lag is measured against this machine's clock: one far ahead of
// Pub/Sub's makes every subscriber grow, costing latency, never messages.
// CatchUpGapMs is how long a Spark task whose rows are older than
// CatchUpLagMs (so it is reading a backlog, not live traffic) reads on
// through a pause before it ends its micro-batch: a server that sends a
// backlog in bursts (Google's emulator pauses between them) would otherwise
// cost a micro-batch per burst. The library does not use it; both Spark
// front ends read it from the contract, so they end tasks alike.
const CatchUpGapMs = 200

type catchUp struct {
	started atomic.Int32 // streams started so far
	grown   atomic.Bool  // the streams were added for catching up
}

// catchUpOn looks at messages received at now and, the first time the
// newest of them is older than the lag, starts the streams left.
func (s *Subscriber) catchUpOn(msgs []wire.Message, now time.Time) {
	if len(msgs) == 0 || s.catchUp.grown.Load() || int(s.catchUp.started.Load()) >= maxStreams(&s.cfg) {
		return
	}
	newest := int64(0)
	for i := range msgs {
		if m := &msgs[i]; m.HasPublishTime {
			newest = max(newest, m.PublishSeconds*1e9+int64(m.PublishNanos))
		}
	}
	if newest == 0 || now.UnixNano()-newest <= int64(s.cfg.CatchUpLagMs)*int64(time.Millisecond) {
		return
	}
	if isClosed(s.closing) || !s.catchUp.grown.CompareAndSwap(false, true) {
		return
	}
	for int(s.catchUp.started.Load()) < maxStreams(&s.cfg) {
		s.startStream()
	}
}
