package subscriber

import (
	"context"
	"testing"
	"time"
)

func TestFlowControllerBlocksWhenFull(t *testing.T) {
	f := newFlowController(2, 1000)
	if err := f.wait(context.Background()); err != nil {
		t.Fatalf("empty controller: wait = %v", err)
	}
	f.add(2, 10)
	if !f.full() {
		t.Fatal("2 of 2 messages: not full")
	}
	done := make(chan error, 1)
	go func() { done <- f.wait(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("wait returned %v while full", err)
	case <-time.After(50 * time.Millisecond):
	}
	f.release(1, 5)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wait still blocked after a release")
	}
	if f.held() != 1 {
		t.Errorf("held = %d, want 1", f.held())
	}
}

func TestFlowControllerBytesLimitAndCancel(t *testing.T) {
	f := newFlowController(100, 1000)
	f.add(1, 1500) // one message bigger than the limit is let in
	if !f.full() {
		t.Fatal("1500 of 1000 bytes: not full")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.wait(ctx); err == nil {
		t.Fatal("wait on a full controller returned nil when its context expired")
	}
	f.release(1, 1500)
	if f.full() {
		t.Error("full after releasing everything")
	}
}

// The byte limit counts each message's bookkeeping, not only its bytes:
// small messages fill it long before their payloads would.
func TestFlowControllerCountsPerMessageOverhead(t *testing.T) {
	f := newFlowController(1_000_000, 10*messageOverhead)
	f.add(9, 9) // 9 one-byte messages: 9 + 9 x overhead, below 10 x overhead
	if f.full() {
		t.Fatal("9 one-byte messages with a limit of 10 x overhead: full already")
	}
	f.add(1, 1) // 10 + 10 x overhead: past the limit although the payloads are 10 bytes
	if !f.full() {
		t.Fatal("10 one-byte messages with a limit of 10 x overhead: not full")
	}
	f.release(10, 10)
	if f.full() || f.bytes != 0 {
		t.Errorf("after releasing everything: full=%v bytes=%d, want not full and 0", f.full(), f.bytes)
	}
}

func TestServerLimits(t *testing.T) {
	// The server gets serverMessagesFactor windows of messages, split
	// across streams and rounded up, and no byte limit.
	cases := []struct {
		msgs, streams int
		wm            int64
	}{
		{1000, 1, 2000},
		{1000, 3, 667},
		{1, 4, 1},
	}
	for _, c := range cases {
		m, b := serverLimits(c.msgs, c.streams)
		if m != c.wm || b != 0 {
			t.Errorf("serverLimits(%d, %d) = %d, %d; want %d, 0", c.msgs, c.streams, m, b, c.wm)
		}
	}
}

// A handed-out batch leaves the byte count (it is the caller's memory
// now) but keeps its bookkeeping counted until it is released, so a caller
// holding its batches unacked does not stop the prefetch.
func TestHandedOutBytesLeaveFlowControl(t *testing.T) {
	srv := newServer(t)
	cfg := testConfig(srv)
	cfg.MaxOutstandingMessages = 1000
	// Each message is ~1 KB + messageOverhead: room for about 4, and
	// once handed out their bookkeeping alone leaves room for more.
	cfg.MaxOutstandingBytes = 4 * (messageOverhead + 1000)
	cfg.AckDeadlineSeconds = 60
	s := openTest(t, cfg, nil)
	// One at a time, so that no response overshoots the limit.
	for i := 0; !s.fc.full(); i++ {
		if i == 10 {
			t.Fatal("10 messages held and flow control not full")
		}
		srv.Publish(testTopic, make([]byte, 1000), nil)
		// Counted by flow control too: deliver counts a message pulled
		// before the reservoir counts it held, and a full() read between
		// the two would publish one message more than the limit lets in.
		waitFor(t, 5*time.Second, "the message pulled and held", func() bool {
			return s.Stats().Pulled == int64(i+1) && s.fc.held() == int64(i+1)
		})
	}
	first := s.Stats().Pulled
	for range 3 {
		srv.Publish(testTopic, make([]byte, 1000), nil)
	}
	time.Sleep(200 * time.Millisecond) // a full subscriber must not read on
	if p := s.Stats().Pulled; p != first {
		t.Fatalf("pulled %d then %d while full", first, p)
	}
	got := nextRows(t, s, int(first), 5*time.Second)
	waitFor(t, 5*time.Second, "more messages while the taken ones are unacked", func() bool {
		return s.Stats().Pulled > first
	})
	s.fc.mu.Lock()
	bytes := s.fc.bytes
	s.fc.mu.Unlock()
	if held := int64(s.Stats().Held); bytes < held*messageOverhead {
		t.Errorf("flow control counts %d bytes for %d held messages, want at least their bookkeeping", bytes, held)
	}
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
}

// The client-side limit holds even against a server that ignores the
// request's flow control (pstest does), and frees up as messages are acked.
func TestMaxOutstandingMessagesHeld(t *testing.T) {
	_, s := openFiveHeld(t, 20, nil)
	time.Sleep(300 * time.Millisecond) // give an unbounded stream time to overshoot
	if st := s.Stats(); st.Pulled != 5 || st.Held != 5 {
		t.Fatalf("stats %+v, want pulled=5 held=5 with max_outstanding_messages=5", st)
	}
	got := nextRows(t, s, 5, 5*time.Second)
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "5 more messages after the ack", func() bool { return s.Stats().Pulled == 10 })
}
