package subscriber

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

func TestStallClockTimesEachConditionAndTheirUnion(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	c := newStallClock(2, 2, t0)
	// Both streams down from Open until the second connects at 300 ms.
	c.live(0, true, at(100))
	if got := c.read(at(200)); got.down != 200*time.Millisecond || got.blocked != 200*time.Millisecond || got.full != 0 {
		t.Fatalf("one stream still connecting at 200 ms: %+v, want down = blocked = 200ms", got)
	}
	c.live(1, true, at(300))
	if got := c.read(at(400)); got.down != 300*time.Millisecond || got.blocked != 0 {
		t.Fatalf("both streams live: %+v, want down 300ms, blocked 0", got)
	}
	// Flow control full 500..900 ms; a stream down 700..1200 ms: blocked
	// without a break from 500 ms, although neither spell alone is that long.
	c.setFull(true, at(500))
	c.live(0, false, at(700))
	c.setFull(false, at(900))
	if got := c.read(at(1000)); got.full != 400*time.Millisecond || got.down != 600*time.Millisecond || got.blocked != 500*time.Millisecond {
		t.Fatalf("full 500..900, down 700..: %+v, want full 400ms, down 600ms, blocked 500ms", got)
	}
	c.live(0, false, at(1100)) // already down: no change
	c.live(0, true, at(1200))
	if got := c.read(at(1300)); got.down != 800*time.Millisecond || got.blocked != 0 {
		t.Fatalf("stream back at 1200 ms: %+v, want down 800ms, blocked 0", got)
	}
	// Close ends the spells and ignores what follows (the streams ending).
	c.live(1, false, at(1400))
	c.close(at(1500))
	c.live(0, false, at(1600))
	c.setFull(true, at(1600))
	if got := c.read(at(5000)); got.down != 900*time.Millisecond || got.full != 400*time.Millisecond || got.blocked != 0 {
		t.Fatalf("after close: %+v, want down 900ms, full 400ms, blocked 0", got)
	}
}

// The flow controller tells the stall clock each time it becomes full and
// stops being full, whichever call made it so.
func TestFlowControllerReportsFullSpells(t *testing.T) {
	c := newStallClock(0, 0, time.Now())
	f := newFlowController(2, 1<<20)
	f.stall = c
	f.add(2, 10)
	time.Sleep(50 * time.Millisecond)
	if got := c.read(time.Now()); got.full < 50*time.Millisecond || got.blocked < 50*time.Millisecond {
		t.Fatalf("50 ms full: %+v", got)
	}
	f.release(1, 5)
	held := c.read(time.Now()).full
	time.Sleep(20 * time.Millisecond)
	if got := c.read(time.Now()); got.full != held || got.blocked != 0 {
		t.Fatalf("after the release: %+v, want full to stay %v and blocked 0", got, held)
	}
	f.add(1, 5) // full again, then lifted for good by disable
	time.Sleep(20 * time.Millisecond)
	f.disable()
	after := c.read(time.Now())
	if after.full < held+20*time.Millisecond || after.blocked != 0 {
		t.Fatalf("after a second spell ended by disable: %+v, want full >= %v and blocked 0", after, held+20*time.Millisecond)
	}
}

// stallSpan is how long the tests below hold a condition: long enough to
// tell growth apart from the few milliseconds a connect or a pull takes.
const stallSpan = 400 * time.Millisecond

// heldFor waits stallSpan with the subscriber held in a condition and
// fails unless the counter ms reads grew by about that much and blocked_ms
// covers it; it returns the stats at the end.
func heldFor(t *testing.T, s *Subscriber, name string, ms func(Stats) int64) Stats {
	t.Helper()
	before := s.Stats()
	time.Sleep(stallSpan)
	after := s.Stats()
	if grew := time.Duration(ms(after)-ms(before)) * time.Millisecond; grew < stallSpan-10*time.Millisecond {
		t.Fatalf("%s grew by %v over %v held (%+v)", name, grew, stallSpan, after)
	}
	if time.Duration(after.BlockedMs)*time.Millisecond < stallSpan {
		t.Fatalf("held for %v: blocked_ms = %d", stallSpan, after.BlockedMs)
	}
	return after
}

func TestFlowFullMsGrowsOnlyWhileFlowControlIsFull(t *testing.T) {
	srv, s := openFiveHeld(t, 5, fast)
	full := heldFor(t, s, "flow_full_ms", func(st Stats) int64 { return st.FlowFullMs })
	if full.QuietMs != 0 {
		t.Fatalf("held full for %v: quiet_ms = %d, want 0", stallSpan, full.QuietMs)
	}

	// Taking and acking the 5 frees the subscriber; one more message shows it receives.
	if err := s.Ack(ackIDs(nextRows(t, s, 5, 5*time.Second))); err != nil {
		t.Fatal(err)
	}
	open := s.Stats()
	publish(srv, 1)
	if err := s.Ack(ackIDs(nextRows(t, s, 1, 5*time.Second))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(stallSpan)
	later := s.Stats()
	if later.FlowFullMs != open.FlowFullMs || later.BlockedMs != 0 {
		t.Fatalf("flow control open: flow_full_ms %d then %d, blocked_ms %d; want no growth and 0",
			open.FlowFullMs, later.FlowFullMs, later.BlockedMs)
	}
}

func TestStreamsDownMsGrowsWhileAStreamCannotConnect(t *testing.T) {
	srv := newServer(t)
	var refuse atomic.Bool
	refuse.Store(true)
	interceptor := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if strings.HasSuffix(method, "/StreamingPull") && refuse.Load() {
			return nil, rpc.Errorf(codes.Unavailable, "injected: connection refused")
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
	cfg := testConfig(srv)
	cfg.Streams = 2
	s := openTest(t, cfg, fast, option.WithGRPCDialOption(grpc.WithStreamInterceptor(interceptor)))
	waitFor(t, 5*time.Second, "a failed connect", func() bool { return s.Stats().StreamsRestarted >= 2 })
	down := heldFor(t, s, "streams_down_ms", func(st Stats) int64 { return st.StreamsDownMs })
	if down.FlowFullMs != 0 {
		t.Fatalf("streams down for %v: flow_full_ms = %d, want 0", stallSpan, down.FlowFullMs)
	}

	// Let them connect; a message received shows the subscriber receives.
	refuse.Store(false)
	publish(srv, 1)
	if err := s.Ack(ackIDs(nextRows(t, s, 1, 5*time.Second))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "both streams live", func() bool { return s.Stats().BlockedMs == 0 })
	live := s.Stats()
	time.Sleep(stallSpan)
	later := s.Stats()
	if later.StreamsDownMs != live.StreamsDownMs || later.BlockedMs != 0 {
		t.Fatalf("streams live: streams_down_ms %d then %d, blocked_ms %d; want no growth and 0",
			live.StreamsDownMs, later.StreamsDownMs, later.BlockedMs)
	}

	// Close ends the streams: not a stall.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed := s.Stats()
	time.Sleep(50 * time.Millisecond)
	if after := s.Stats(); after.StreamsDownMs != closed.StreamsDownMs || after.BlockedMs != 0 {
		t.Fatalf("after Close: streams_down_ms %d then %d, blocked_ms %d", closed.StreamsDownMs, after.StreamsDownMs, after.BlockedMs)
	}
}
