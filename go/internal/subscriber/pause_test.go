package subscriber

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// streamsInSession counts s's streams in a live session (the stall clock's view).
func streamsInSession(s *Subscriber) int {
	s.stall.mu.Lock()
	defer s.stall.mu.Unlock()
	n := 0
	for i, up := range s.stall.up {
		if up && i < int(s.catchUp.started.Load()) {
			n++
		}
	}
	return n
}

// Pause ends every session and receives nothing until Resume; what it held
// keeps its lease meanwhile (no redelivery past several ack deadlines),
// and the paused time is not reported as a stall.
func TestPauseEndsStreamsKeepsLeasesAndResumeReceivesAgain(t *testing.T) {
	srv := newServer(t)
	cfg := testConfig(srv)
	cfg.Streams = 2
	s := openTest(t, cfg, fast)
	waitFor(t, 10*time.Second, "both streams in a session", func() bool { return streamsInSession(s) == 2 })

	publish(srv, 3)
	held := nextRows(t, s, 3, 10*time.Second)

	s.Pause()
	waitFor(t, 10*time.Second, "every session ended", func() bool { return streamsInSession(s) == 0 })
	publish(srv, 4)
	pulled := s.Stats().Pulled
	time.Sleep(2500 * time.Millisecond) // over two ack deadlines and prefetch leases (fast: 1 s)
	st := s.Stats()
	if st.Pulled != pulled {
		t.Errorf("paused, the subscriber pulled %d more messages", st.Pulled-pulled)
	}
	if st.Redeliveries != 0 || st.Held != 3 {
		t.Errorf("paused: held=%d redeliveries=%d, want the 3 held messages kept under lease", st.Held, st.Redeliveries)
	}
	if st.BlockedMs != 0 {
		t.Errorf("paused: blocked_ms=%d, want 0 (a pause is not a stall)", st.BlockedMs)
	}

	s.Resume()
	s.Resume() // a second Resume changes nothing
	more := nextRows(t, s, 4, 10*time.Second)
	waitFor(t, 10*time.Second, "both streams in a session again", func() bool { return streamsInSession(s) == 2 })
	if err := s.Ack(ackIDs(append(held, more...))); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Redeliveries != 0 || st.Acked != 7 || st.StreamsRestarted != 0 {
		t.Errorf("after resume: %+v, want 7 acked, no redelivery, no stream counted as restarted", st)
	}
}

// Close of a paused subscriber returns promptly and nacks what it buffered.
func TestClosePaused(t *testing.T) {
	srv := newServer(t)
	s := openTest(t, testConfig(srv), fast)
	publish(srv, 5)
	waitFor(t, 10*time.Second, "5 buffered", func() bool { return s.Stats().Buffered == 5 })
	s.Pause()
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close of a paused subscriber took %v", took)
	}
	if st := s.Stats(); st.NackedOnClose != 5 {
		t.Errorf("nacked_on_close=%d, want 5", st.NackedOnClose)
	}
}

// Pause returns only once every stream's half-close is sent: a process
// killed right after it (Spark's SIGKILL of a worker that keeps a paused
// subscriber) cuts no stream that was still about to half-close. Looked at
// the moment Pause returns, without waiting.
func TestPauseReturnsOnceEveryHalfCloseIsSent(t *testing.T) {
	for range 5 { // before, Pause returned before any keepalive goroutine ran, nearly always
		srv := newServer(t)
		var f faults
		cfg := testConfig(srv)
		cfg.Streams = 2
		s := openTest(t, cfg, fast, f.options()...)
		waitFor(t, 10*time.Second, "both streams in a session", func() bool { return streamsInSession(s) == 2 })
		s.Pause()
		f.mu.Lock()
		events := slices.Clone(f.events)
		f.mu.Unlock()
		for _, want := range []string{"closesend 0", "closesend 1"} {
			if !slices.Contains(events, want) {
				t.Fatalf("events when Pause returned: %v, want %q", events, want)
			}
		}
		s.Resume()
		waitFor(t, 10*time.Second, "both streams in a new session", func() bool {
			return f.streamCount() == 4 && streamsInSession(s) == 2
		})
		s.Pause() // a second pause, of the sessions Resume opened, waits for theirs
		f.mu.Lock()
		events = slices.Clone(f.events)
		f.mu.Unlock()
		if n := len(slices.DeleteFunc(events, func(e string) bool { return !strings.HasPrefix(e, "closesend") })); n != 4 {
			t.Fatalf("%d half-closes when the second Pause returned, want 4", n)
		}
	}
}
