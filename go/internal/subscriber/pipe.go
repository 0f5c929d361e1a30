package subscriber

import "time"

// pipeClock bounds how long the messages of a response read from a stream
// may have been leased to it at the server: their "age" when read.
//
// Why: a full subscriber stops reading its stream (flow control), but the
// server has leased what it already sent, and what it queued to send, and
// their ack deadline runs at the server while they wait: in gRPC's buffers,
// and in the server's send queue behind gRPC's flow control. The client
// cannot see when the server leased a message. Starting the lease at the
// read (as the subscriber once did) let a message that had waited most of
// its deadline expire before its first extension; the server then
// redelivered it to another consumer while this one handed out its copy:
// a duplicate, even through the file sink (docs/source.md, "Exactly once
// through failures").
//
// The bound: the "pipe" between the server's lease and our read holds at
// most pipeBytes (gRPC's stream window, at most its BDP limit of 16 MiB,
// plus what the server can queue behind it, taken as two responses of the
// largest size seen). A message waits in it only while the stream is
// paused, or while what was ahead of it is read, which takes at most
// pipeDrain when not paused. So its age is at most pipeDrain plus the
// pauses that may have overlapped its wait: those that ended less than
// pipeBytes of reading ago (everything in the pipe when a pause ended has
// been read after that much), and none before a receive that found the
// pipe empty (blocked for idleGap or more: the server had nothing queued).
//
// The stream uses it two ways (stream.go): leases start at read time minus
// the bound, so their first extension comes in time; and a pause that
// would take the bound past what the prefetch lease allows ends the
// session instead (stream.retire: half-close, and nack whatever is still
// read), so no copy that might have expired is ever handed out.
//
// Not safe for concurrent use: one per session, used by its receiving
// goroutine.
type pipeClock struct {
	read    int64         // bytes received in this session
	maxResp int64         // the largest response so far
	pauses  []pause       // possibly overlapping what is still in the pipe, oldest first
	sum     time.Duration // of pauses
}

type pause struct {
	d     time.Duration
	endAt int64 // bytes received when it ended
}

const (
	// grpcWindowMax is the largest stream window gRPC-go's BDP estimator
	// grants (bdpLimit in internal/transport): the most a stream holds in
	// the client's buffers.
	grpcWindowMax = 16 << 20
	// minServerQueue is what the server may hold leased behind the window
	// before any response was seen: two 1 MiB responses.
	minServerQueue = 2 << 20
	// idleGap is a receive long enough to show the pipe was empty when it
	// started: far above a round trip to Pub/Sub within a region (and on
	// loopback), so the server had nothing queued either; and above the
	// scheduling delays of a busy machine, which would pass for one.
	idleGap = 50 * time.Millisecond
)

// pipeBytes is the most the pipe can hold.
func (p *pipeClock) pipeBytes() int64 {
	return grpcWindowMax + max(minServerQueue, 2*p.maxResp)
}

// paused records that the stream did not read for d.
func (p *pipeClock) paused(d time.Duration) {
	if d > 0 {
		p.pauses = append(p.pauses, pause{d: d, endAt: p.read})
		p.sum += d
	}
}

// received records a response of n bytes whose receive blocked for
// waited, and returns the bound on its messages' age, pipeDrain included.
func (p *pipeClock) received(n int64, waited, pipeDrain time.Duration) time.Duration {
	if waited >= idleGap {
		p.pauses, p.sum = p.pauses[:0], 0
	}
	p.maxResp = max(p.maxResp, n)
	// This response starts at byte p.read: pauses that ended a whole pipe
	// earlier cannot have held it. They ended in order, so they leave from
	// the front.
	flushed := 0
	for _, q := range p.pauses {
		if q.endAt+p.pipeBytes() > p.read {
			break
		}
		p.sum -= q.d
		flushed++
	}
	p.pauses = p.pauses[flushed:] // append reallocates once the front is used up
	p.read += n
	return p.sum + pipeDrain
}

// unflushed is the pauses that may overlap the wait of what is still in
// the pipe.
func (p *pipeClock) unflushed() time.Duration { return p.sum }
