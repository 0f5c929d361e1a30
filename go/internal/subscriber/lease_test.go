package subscriber

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestDueExtendsInTheSecondHalfOfTheDeadline(t *testing.T) {
	fc := newFlowController(100, 1<<20)
	r := testReservoir(fc, 1000)
	start := time.Now()
	r.add(received("a", "b"), start, 10*time.Second)
	r.take(1, false) // handed-out messages are leased too

	if ids := dueAll(r, start.Add(4*time.Second), 10*time.Second, time.Hour); len(ids) != 0 {
		t.Errorf("due 4s into a 10s deadline: %v, want none", ids)
	}
	ids := dueAll(r, start.Add(6*time.Second), 10*time.Second, time.Hour)
	slices.Sort(ids)
	if fmt.Sprint(ids) != "[ack-a ack-b]" {
		t.Errorf("due 6s into a 10s deadline: %v, want both", ids)
	}
	// Extended to 16s: not due again until 11s.
	if ids := dueAll(r, start.Add(10*time.Second), 10*time.Second, time.Hour); len(ids) != 0 {
		t.Errorf("due right after extension: %v", ids)
	}
	if ids := dueAll(r, start.Add(11*time.Second), 10*time.Second, time.Hour); len(ids) != 2 {
		t.Errorf("due at 11s: %v, want both", ids)
	}
	// A user modack to 5 minutes postpones the next extension.
	r.touch([]string{"ack-a"}, start.Add(11*time.Second+5*time.Minute))
	if ids := dueAll(r, start.Add(18*time.Second), 10*time.Second, time.Hour); fmt.Sprint(ids) != "[ack-b]" {
		t.Errorf("due after modack of a: %v, want [ack-b]", ids)
	}
}

func TestDueGivesUpAfterMaxExtension(t *testing.T) {
	fc := newFlowController(100, 1<<20)
	r := testReservoir(fc, 1000)
	start := time.Now()
	r.add(received("a", "b"), start, 10*time.Second)
	r.take(1, false)
	if ids := dueAll(r, start.Add(30*time.Second), 10*time.Second, 30*time.Second); len(ids) != 0 {
		t.Errorf("due past max extension: %v, want none", ids)
	}
	if held, _ := r.len(); held != 0 || fc.held() != 0 {
		t.Errorf("after max extension held=%d flow=%d, want 0 0", held, fc.held())
	}
	// The expired buffered message b is still handed out (see reservoir),
	// unleased: the server redelivers it too; nothing is lost.
	if b, _, _ := r.take(1, true); takenIDs(b) != "[b]" {
		t.Errorf("the buffered message was not handed out")
	}
}

// A message held (handed out, unacked) for three ack deadlines is not
// redelivered, because its lease is extended.
func TestLeaseKeepsHeldMessages(t *testing.T) {
	srv := newServer(t)
	ids := publish(srv, 2)
	s := openTest(t, testConfig(srv), fast) // 1s deadline
	waitFor(t, 5*time.Second, "2 messages pulled", func() bool { return s.Stats().Pulled == 2 })
	got := nextRows(t, s, 1, 5*time.Second) // one handed out, one buffered

	time.Sleep(3 * time.Second) // the hold under test: three deadlines
	st := s.Stats()
	if st.Redeliveries != 0 || st.Pulled != 2 {
		t.Errorf("stats %+v, want no redelivery", st)
	}
	if st.Extended < 4 {
		t.Errorf("extended = %d, want several extensions of both messages", st.Extended)
	}
	for _, id := range ids {
		m := srv.Message(id)
		if m.Deliveries != 1 {
			t.Errorf("message %s delivered %d times", id, m.Deliveries)
		}
		if len(m.Modacks) < 2 || m.Modacks[0].AckDeadline != 1 {
			t.Errorf("message %s: modacks %+v, want repeated 1s extensions", id, m.Modacks)
		}
	}
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
}

// The control for the test above: a released message is no longer
// extended and comes back after its deadline.
func TestReleasedMessageIsRedelivered(t *testing.T) {
	srv := newServer(t)
	ids := publish(srv, 1)
	s := openTest(t, testConfig(srv), fast)
	got := nextRows(t, s, 1, 5*time.Second)
	s.Release(ackIDs(got))
	if st := s.Stats(); st.Held != 0 {
		t.Errorf("held = %d after release, want 0", st.Held)
	}
	again := nextRows(t, s, 1, 5*time.Second)
	if again[0].id != ids[0] {
		t.Errorf("redelivered %s, want %s", again[0].id, ids[0])
	}
	if st := s.Stats(); st.Redeliveries != 1 {
		t.Errorf("redeliveries = %d, want 1", st.Redeliveries)
	}
	if err := s.Ack(ackIDs(again)); err != nil {
		t.Fatal(err)
	}
}

func TestMaxExtensionStopsLeasing(t *testing.T) {
	srv := newServer(t)
	publish(srv, 1)
	s := openTest(t, testConfig(srv), func(set *settings) {
		fast(set)
		set.maxExtension = 1500 * time.Millisecond
	})
	waitFor(t, 10*time.Second, "a redelivery after max extension", func() bool { return s.Stats().Redeliveries >= 1 })
	if st := s.Stats(); st.Extended == 0 {
		t.Errorf("stats %+v: the message was never extended before giving up", st)
	}
}

// dueAll is due with one lease for prefetched and handed-out messages.
func dueAll(r *reservoir, now time.Time, deadline, maxExtension time.Duration) []string {
	p, h := r.due(now, deadline, deadline, maxExtension)
	return append(p, h...)
}

// Prefetched messages are extended by the short prefetch lease, handed-out
// ones by the ack deadline: a dead process's prefetch comes back soon.
func TestDueLeasesPrefetchBrieflyAndHandedOutForTheAckDeadline(t *testing.T) {
	fc := newFlowController(100, 1<<20)
	r := testReservoir(fc, 1000)
	start := time.Now()
	r.add(received("a", "b"), start, 10*time.Second) // the stream deadline is the prefetch lease
	r.take(1, false)                                 // a is handed out, b stays prefetched

	p, h := r.due(start.Add(6*time.Second), 10*time.Second, 60*time.Second, time.Hour)
	if fmt.Sprint(p) != "[ack-b]" || fmt.Sprint(h) != "[ack-a]" {
		t.Fatalf("due at 6s: prefetched %v handed %v, want [ack-b] [ack-a]", p, h)
	}
	// b was extended to 16s, a to 66s.
	p, h = r.due(start.Add(12*time.Second), 10*time.Second, 60*time.Second, time.Hour)
	if fmt.Sprint(p) != "[ack-b]" || len(h) != 0 {
		t.Errorf("due at 12s: prefetched %v handed %v, want [ack-b] []", p, h)
	}
	p, h = r.due(start.Add(37*time.Second), 10*time.Second, 60*time.Second, time.Hour)
	if fmt.Sprint(p) != "[ack-b]" || fmt.Sprint(h) != "[ack-a]" {
		t.Errorf("due at 37s: prefetched %v handed %v, want [ack-b] [ack-a]", p, h)
	}
}
