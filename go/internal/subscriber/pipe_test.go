package subscriber

import (
	"context"
	"testing"
	"time"
)

// A subscriber that stays full stops reading its stream, and what the
// server sent meanwhile waits in gRPC's buffers with its lease running at
// the server. pstest (no server-side flow control, one message per
// response) keeps leasing into the stream and redelivers what expires into
// the same stream, so a stale copy read after a long pause would be handed
// out beside its fresh redelivery. Every message must be handed out once.
func TestFullSubscriberHandsOutNoStaleCopies(t *testing.T) {
	srv := newServer(t)
	const n = 300
	publish(srv, n)
	cfg := testConfig(srv)
	cfg.MaxOutstandingMessages = 10
	s := openTest(t, cfg, fast)
	waitFor(t, 5*time.Second, "the subscriber to fill", func() bool { return s.fc.full() })
	// Several prefetch leases (1 s in fast) with the stream paused.
	time.Sleep(3 * time.Second)

	seen := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		// A slow consumer: a few rows at a time, so the stream keeps pausing.
		takeAndAck(t, s, 7, seen)
		time.Sleep(20 * time.Millisecond)
	}
	// Anything handed out twice has shown up by now; wait a lease for late ones.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		takeAndAck(t, s, 100, seen)
	}
	twice := 0
	for _, c := range seen {
		if c > 1 {
			twice++
		}
	}
	st := s.Stats()
	if len(seen) != n || twice != 0 {
		t.Fatalf("%d of %d messages handed out, %d of them more than once (stats %+v)", len(seen), n, twice, st)
	}
	// The 3 s pause outlasted what the pipe may wait (0.6 s in fast): the
	// session ended and what it still read was nacked.
	if st.StreamsRestarted == 0 || st.Nacked == 0 {
		t.Errorf("no stream retired after a 3 s pause (stats %+v)", st)
	}
}

// takeAndAck takes up to maxRows, counts them by message id into seen and
// acks them.
func takeAndAck(t *testing.T, s *Subscriber, maxRows int, seen map[string]int) {
	t.Helper()
	b, err := s.Next(context.Background(), maxRows, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rs := rows(t, b)
	for _, r := range rs {
		seen[r.id]++
	}
	if len(rs) > 0 {
		if err := s.Ack(ackIDs(rs)); err != nil {
			t.Fatal(err)
		}
	}
}

// A pause well within the prefetch lease keeps the stream.
func TestShortPauseKeepsStream(t *testing.T) {
	srv := newServer(t)
	publish(srv, 20)
	cfg := testConfig(srv)
	cfg.MaxOutstandingMessages = 5
	s := openTest(t, cfg, nil) // 10 s prefetch lease: pauses up to 6 s
	waitFor(t, 5*time.Second, "the subscriber to fill", func() bool { return s.fc.full() })
	time.Sleep(2 * time.Second)
	for range 4 {
		got := nextRows(t, s, 5, 10*time.Second)
		if err := s.Ack(ackIDs(got)); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.StreamsRestarted != 0 {
		t.Errorf("streams_restarted = %d after a 2 s pause, want 0", st.StreamsRestarted)
	}
}

func TestPipeClockBound(t *testing.T) {
	const drain = time.Second
	var p pipeClock
	if got := p.received(100, 0, drain); got != drain {
		t.Fatalf("no pause: bound %v, want %v", got, drain)
	}
	p.paused(3 * time.Second)
	p.paused(2 * time.Second)
	if got := p.received(1<<20, 0, drain); got != 6*time.Second {
		t.Fatalf("after 5 s of pauses: bound %v, want 6s", got)
	}
	// A whole pipe read after the pauses ended: they held none of what
	// comes next. pipeBytes grew with the 1 MiB response (2 x 1 MiB <
	// minServerQueue: unchanged).
	for p.read < grpcWindowMax+minServerQueue+100 {
		if got := p.received(1<<20, 0, drain); got != 6*time.Second {
			t.Fatalf("at byte %d, before a whole pipe was read: bound %v, want 6s", p.read, got)
		}
	}
	if got := p.received(100, 0, drain); got != drain {
		t.Fatalf("a whole pipe after the pauses: bound %v, want %v", got, drain)
	}

	// A receive that waited idleGap found the pipe empty.
	p.paused(4 * time.Second)
	if got := p.received(100, idleGap, drain); got != drain {
		t.Fatalf("after an idle receive: bound %v, want %v", got, drain)
	}
	// A large response widens the pipe: the server may queue two of them.
	p.received(8<<20, 0, drain)
	if got := p.pipeBytes(); got != grpcWindowMax+16<<20 {
		t.Fatalf("pipeBytes %d after an 8 MiB response", got)
	}
}

func TestPipeTimingsLeaveRoomForTheFirstExtension(t *testing.T) {
	for _, lease := range []time.Duration{time.Second, 10 * time.Second} {
		s := settings{prefetchLease: lease, leaseTick: lease / 10}
		// The oldest message read is extended within a tick, with time to spare.
		if s.maxPipeAge()+s.leaseTick >= lease || s.maxPipeAge()-s.pipeDrain() < lease/2 {
			t.Errorf("lease %v: pipeDrain %v maxPipeAge %v", lease, s.pipeDrain(), s.maxPipeAge())
		}
	}
}
