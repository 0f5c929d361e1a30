package subscriber

import (
	"sync"
	"time"
)

// stallClock times how long a subscriber could not receive: flow control
// full (streams stop reading) or a stream out of a live session
// (connecting, backing off, reopening). Without it a stalled subscriber
// reports what an empty subscription does: nothing pulled, and quiet_ms 0
// (so the source's backlog evidence would take a stalled subscriber for a
// drained subscription). The flow controller reports its transitions under its own
// lock, the streams theirs as their sessions start and end; one lock here
// keeps the spell of "either" exact when the two overlap.
//
// It counts from Open until Close begins: after that, streams ending and
// flow control lifting are the subscriber shutting down, not a stall.
type stallClock struct {
	mu      sync.Mutex
	full    spell  // flow control full
	down    spell  // at least one stream not in a live session
	blocked spell  // either
	up      []bool // per stream: in a live session
	nDown   int    // streams not up
	isFull  bool
	paused  bool // Subscriber.Pause: streams out of a session are not down
	closed  bool
}

// spell accumulates the time a condition held: closed spells in total,
// the open one (if any) since its start.
type spell struct {
	total time.Duration
	since time.Time // start of the open spell; zero: the condition does not hold
}

func (p *spell) set(on bool, now time.Time) {
	switch {
	case on && p.since.IsZero():
		p.since = now
	case !on && !p.since.IsZero():
		p.total += now.Sub(p.since)
		p.since = time.Time{}
	}
}

// current is how long the open spell has lasted at now; 0 if none.
func (p *spell) current(now time.Time) time.Duration {
	if p.since.IsZero() {
		return 0
	}
	return max(0, now.Sub(p.since))
}

// newStallClock starts a clock for streams streams at now, all of them not
// yet in a session (Open returns before they connect), and room for up to
// maxStreams (catchup.go): one not started is not down.
func newStallClock(streams, maxStreams int, now time.Time) *stallClock {
	c := &stallClock{up: make([]bool, max(streams, maxStreams)), nDown: streams}
	for i := streams; i < len(c.up); i++ {
		c.up[i] = true
	}
	c.update(now)
	return c
}

// update opens or closes the spells for the current state; c.mu held.
func (c *stallClock) update(now time.Time) {
	c.full.set(c.isFull, now)
	down := c.nDown > 0 && !c.paused
	c.down.set(down, now)
	c.blocked.set(c.isFull || down, now)
}

// pause records that the subscriber was paused or resumed (pause.go).
func (c *stallClock) pause(paused bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.paused = paused
	c.update(now)
}

// setFull records that flow control became full or stopped being full.
func (c *stallClock) setFull(full bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.isFull = full
	c.update(now)
}

// live records that stream i's session started (up) or ended.
func (c *stallClock) live(i int, up bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.up[i] == up {
		return
	}
	c.up[i] = up
	if up {
		c.nDown--
	} else {
		c.nDown++
	}
	c.update(now)
}

// close ends every spell at now (Close began) and ignores what follows.
func (c *stallClock) close(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.isFull, c.nDown = false, 0
	c.update(now)
	c.closed = true
}

// stallTimes are a stallClock's readings at one instant.
type stallTimes struct {
	full, down time.Duration // in total since Open, the open spell included
	blocked    time.Duration // the open spell of either; 0 if the subscriber can receive
}

func (c *stallClock) read(now time.Time) stallTimes {
	c.mu.Lock()
	defer c.mu.Unlock()
	return stallTimes{
		full:    c.full.total + c.full.current(now),
		down:    c.down.total + c.down.current(now),
		blocked: c.blocked.current(now),
	}
}
