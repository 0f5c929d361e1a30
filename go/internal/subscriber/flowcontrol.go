package subscriber

import (
	"context"
	"sync"
	"time"
)

// flowController bounds what a subscriber holds in memory. Its message
// count is every message received and not yet acked, nacked, released or
// expired, whether buffered or handed out. Its byte count is what holding
// them costs this process: the encoded bytes of messages not yet handed
// out (a handed-out batch is the caller's memory), plus messageOverhead for
// every held message, so that a byte limit bounds memory for small
// payloads too, where the bookkeeping outweighs the bytes
// (bench/tools/spark_memory.py measures a worker's peak at 100 B). A stream stops
// reading while the subscriber is full, which in turn stops the server
// through gRPC flow control; the limits sent to the server are looser
// (serverLimits). Why it is not the publisher's controller: see
// publisher/flowcontrol.go.
type flowController struct {
	maxMsgs  int64
	maxBytes int64

	mu       sync.Mutex
	msgs     int64
	bytes    int64
	disabled bool
	space    signal

	// stall, if set, is told when the controller becomes full and stops
	// being full (the subscriber's flow_full_ms); wasFull is what it was
	// last told. nil for a controller tested alone.
	stall   *stallClock
	wasFull bool
}

// messageOverhead is what a held message costs besides its encoded bytes:
// its entry in the held index and its ack id on the Go heap (~180 B per
// message measured at 100 B payloads: 18 MB of live heap for 101,000 held),
// and the Arrow columns besides the payload (offsets, publish time,
// validity; ~80 B), rounded up.
const messageOverhead = 256

func newFlowController(maxMsgs int, maxBytes int64) *flowController {
	return &flowController{maxMsgs: int64(maxMsgs), maxBytes: maxBytes}
}

// add counts received messages. It never blocks: the messages are already
// here, so the limit may be overshot by one response.
func (f *flowController) add(n int, bytes int64) {
	f.mu.Lock()
	f.msgs += int64(n)
	f.bytes += bytes + int64(n)*messageOverhead
	f.changed()
	f.mu.Unlock()
}

// release uncounts messages that are no longer held.
func (f *flowController) release(n int, bytes int64) {
	if n == 0 {
		return
	}
	f.mu.Lock()
	f.msgs -= int64(n)
	f.bytes -= bytes + int64(n)*messageOverhead
	f.changed()
	f.mu.Unlock()
	f.space.broadcast()
}

// handOver uncounts the payload bytes of messages handed to a caller.
func (f *flowController) handOver(bytes int64) {
	if bytes == 0 {
		return
	}
	f.mu.Lock()
	f.bytes -= bytes
	f.changed()
	f.mu.Unlock()
	f.space.broadcast()
}

// full reports whether another message would exceed a limit.
func (f *flowController) full() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fullLocked()
}

func (f *flowController) fullLocked() bool {
	return !f.disabled && (f.msgs >= f.maxMsgs || f.bytes >= f.maxBytes)
}

// changed tells the stall clock when the counts just made the controller
// full or not full; f.mu held, so transitions reach it in order.
func (f *flowController) changed() {
	if f.stall == nil {
		return
	}
	if full := f.fullLocked(); full != f.wasFull {
		f.wasFull = full
		f.stall.setFull(full, time.Now())
	}
}

// disable lifts the limits for good: while closing, streams must read to
// the end of the stream whatever arrives.
func (f *flowController) disable() {
	f.mu.Lock()
	f.disabled = true
	f.changed()
	f.mu.Unlock()
	f.space.broadcast()
}

// wait blocks while the subscriber is full.
func (f *flowController) wait(ctx context.Context) error {
	for {
		if _, room, err := f.waitUpTo(ctx, time.Hour); room || err != nil {
			return err
		}
	}
}

// waitUpTo blocks while the subscriber is full, for at most limit. It
// reports how long it waited and whether space came (false: limit ran out).
func (f *flowController) waitUpTo(ctx context.Context, limit time.Duration) (time.Duration, bool, error) {
	if !f.full() {
		return 0, true, nil
	}
	start := time.Now()
	timer := time.NewTimer(max(limit, 0))
	defer timer.Stop()
	for {
		wake := f.space.wait()
		if !f.full() {
			return time.Since(start), true, nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), false, ctx.Err()
		case <-timer.C:
			return time.Since(start), false, nil
		case <-wake:
		}
	}
}

// held is the number of messages currently counted.
func (f *flowController) held() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msgs
}

// serverMessagesFactor sizes the server-side message limit. The server
// counts a message until it is acked; this subscriber only until it is
// released. A Spark task releases its take to the driver, which acks it
// when the micro-batch commits: until then the take (up to the client
// limit) is still outstanding at the server, and a server limit equal to
// the client's would hold back the next task's prefetch until the commit,
// and tasks then waited on the stream for ~40% of their time
// (bench/tools/spark_cpu.py --pyspy shows a task's wait in pull). One window for
// the take awaiting its ack, one for the prefetch meanwhile.
const serverMessagesFactor = 2

// serverLimits are the flow-control limits of each StreamingPullRequest,
// split across streams and rounded up so no stream gets 0. Bytes are not
// limited at the server (0): it would count a take's bytes until the
// commit, while the client-side byte count stops at hand-over, and the
// client's limit already stops the server (a full subscriber stops
// reading; gRPC-go's stream window, at most 16 MiB with its BDP estimate,
// bounds what is in flight).
func serverLimits(maxMsgs int, streams int) (msgs, bytes int64) {
	n := int64(streams)
	return (int64(maxMsgs)*serverMessagesFactor + n - 1) / n, 0
}
