package subscriber

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

func TestOpenUnknownSubscription(t *testing.T) {
	srv := newServer(t)
	cfg := testConfig(srv)
	cfg.Subscription = "projects/p/subscriptions/missing"
	_, err := Open(context.Background(), cfg)
	if rpc.Code(err) != codes.NotFound {
		t.Fatalf("Open = %v (code %v), want NOT_FOUND", err, rpc.Code(err))
	}
	if !strings.Contains(err.Error(), cfg.Subscription) {
		t.Errorf("error %q does not name the subscription", err)
	}
}

func TestOpenUnreachableEndpoint(t *testing.T) {
	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	cfg := Config{Options: clientopt.Options{EmulatorHost: addr}, Subscription: testSub, OpenTimeoutMs: 1500}
	start := time.Now()
	_, err = Open(context.Background(), cfg)
	took := time.Since(start)
	if rpc.Code(err) != codes.Unavailable {
		t.Fatalf("Open = %v (code %v), want UNAVAILABLE", err, rpc.Code(err))
	}
	for _, want := range []string{addr, "attempts", "open_timeout_ms=1500"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Retried for about the timeout: more than one attempt, and bounded.
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Errorf("Open gave up after %v, want about 1.5s", took)
	}
	if strings.Contains(err.Error(), " 1 attempts") {
		t.Errorf("no retries: %v", err)
	}
}

func TestOpenInvalidConfig(t *testing.T) {
	_, err := Open(context.Background(), Config{Subscription: testSub, Options: clientopt.Options{EmulatorHost: "127.0.0.1:1"}, Streams: -2})
	if rpc.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "streams") {
		t.Fatalf("Open = %v, want INVALID_ARGUMENT naming streams", err)
	}
}

func TestNextReturnsMessagesInBatch(t *testing.T) {
	srv := newServer(t)
	ids := publish(srv, 5)
	s := openTest(t, testConfig(srv), fast)

	start := time.Now()
	b, err := s.Next(context.Background(), 5, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := rows(t, b)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Next took %v although 5 messages were available", took)
	}
	if len(got) != 5 {
		t.Fatalf("got %d rows, want 5", len(got))
	}
	byID := map[string]row{}
	for _, r := range got {
		byID[r.id] = r
	}
	for i, id := range ids {
		r, ok := byID[id]
		if !ok {
			t.Errorf("message %s missing", id)
			continue
		}
		if want := fmt.Sprint("payload-", i); r.payload != want || r.attrs["i"] != fmt.Sprint(i) {
			t.Errorf("message %s: payload %q attrs %v, want %q i=%d", id, r.payload, r.attrs, want, i)
		}
		if !strings.HasPrefix(r.ackID, id+":") {
			t.Errorf("message %s has ack id %q from another message", id, r.ackID)
		}
	}
	st := s.Stats()
	if st.Pulled != 5 || st.HandedOut != 5 || st.Held != 5 || st.BytesPulled == 0 {
		t.Errorf("stats %+v, want pulled=5 handed_out=5 held=5", st)
	}
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Held != 0 || st.Acked != 5 {
		t.Errorf("after ack: stats %+v, want held=0 acked=5", st)
	}
}

func TestNextEmptyAfterWait(t *testing.T) {
	srv := newServer(t)
	s := openTest(t, testConfig(srv), fast)
	start := time.Now()
	b, waited, err := s.NextWait(context.Background(), 10, 200*time.Millisecond)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows(t, b)); n != 0 {
		t.Errorf("got %d rows from an empty subscription", n)
	}
	if !waited {
		t.Error("NextWait did not report that its wait ran out")
	}
	if took < 200*time.Millisecond || took > 2*time.Second {
		t.Errorf("Next returned after %v, want about the 200ms wait", took)
	}
}

func TestNextWaitFullBatchDidNotWaitOut(t *testing.T) {
	srv := newServer(t)
	publish(srv, 5)
	s := openTest(t, testConfig(srv), fast)
	waitFor(t, 5*time.Second, "5 messages pulled", func() bool { return s.Stats().Pulled == 5 })
	b, waited, err := s.NextWait(context.Background(), 5, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows(t, b)); n != 5 || waited {
		t.Errorf("a full batch: got %d rows, waited_out=%v; want 5 rows, false", n, waited)
	}
	b, waited, err = s.NextWait(context.Background(), 5, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows(t, b)); n != 0 || !waited {
		t.Errorf("nothing left: got %d rows, waited_out=%v; want 0 rows, true", n, waited)
	}
	if q := s.Stats().QuietMs; q <= 0 {
		t.Errorf("quiet_ms = %d after a silent wait with the stream live, want > 0", q)
	}
}

func TestNextDefaults(t *testing.T) {
	srv := newServer(t)
	publish(srv, 5)
	cfg := testConfig(srv)
	cfg.BatchSize = 3
	s := openTest(t, cfg, fast)
	waitFor(t, 5*time.Second, "5 messages pulled", func() bool { return s.Stats().Pulled == 5 })
	b, err := s.Next(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows(t, b)); n != 3 {
		t.Errorf("Next(0, 0) gave %d rows, want batch_size 3", n)
	}
}

func TestNextAfterClose(t *testing.T) {
	srv := newServer(t)
	s := openTest(t, testConfig(srv), fast)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := s.Next(context.Background(), 1, time.Millisecond); rpc.Code(err) != codes.FailedPrecondition {
		t.Errorf("Next after Close = %v, want FAILED_PRECONDITION", err)
	}
	if err := s.Ack([]string{"x"}); rpc.Code(err) != codes.FailedPrecondition {
		t.Errorf("Ack after Close = %v, want FAILED_PRECONDITION", err)
	}
}

func TestCloseWakesBlockedNext(t *testing.T) {
	srv := newServer(t)
	s := openTest(t, testConfig(srv), fast)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Next(context.Background(), 10, time.Minute)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let Next start waiting (either way it must fail)
	s.Close()
	select {
	case err := <-errc:
		if rpc.Code(err) != codes.FailedPrecondition {
			t.Errorf("blocked Next = %v, want FAILED_PRECONDITION", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked 5s after Close")
	}
}

func TestAckedNotRedelivered(t *testing.T) {
	srv := newServer(t)
	ids := publish(srv, 3)
	s := openTest(t, testConfig(srv), fast)
	got := nextRows(t, s, 3, 5*time.Second)
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if m := srv.Message(id); m.Acks != 1 {
			t.Errorf("message %s: server saw %d acks, want 1", id, m.Acks)
		}
	}
	// Twice the (1 s) ack deadline later nothing came back.
	b, err := s.Next(context.Background(), 1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows(t, b)); n != 0 {
		t.Errorf("%d acked messages were redelivered", n)
	}
	if st := s.Stats(); st.Redeliveries != 0 || st.Acked != 3 {
		t.Errorf("stats %+v, want acked=3 redeliveries=0", st)
	}
}

func TestNackRedeliveredPromptly(t *testing.T) {
	srv := newServer(t)
	ids := publish(srv, 1)
	cfg := testConfig(srv)
	cfg.AckDeadlineSeconds = 60 // redelivery must come from the nack, not expiry
	s := openTest(t, cfg, nil)
	first := nextRows(t, s, 1, 5*time.Second)
	if err := s.Nack(ackIDs(first)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	again := nextRows(t, s, 1, 5*time.Second)
	if again[0].id != ids[0] || again[0].ackID == first[0].ackID {
		t.Errorf("after nack got %+v, want message %s with a new ack id", again[0], ids[0])
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("redelivery took %v", took)
	}
	if st := s.Stats(); st.Nacked != 1 || st.Redeliveries != 1 || st.Pulled != 2 {
		t.Errorf("stats %+v, want nacked=1 redeliveries=1 pulled=2", st)
	}
	if err := s.Ack(ackIDs(again)); err != nil {
		t.Fatal(err)
	}
}

func TestCloseNacksOnlyBufferedMessages(t *testing.T) {
	srv := newServer(t)
	publish(srv, 10)
	cfg := testConfig(srv)
	cfg.AckDeadlineSeconds = 60 // a prompt comeback can only be the nack
	s := openTest(t, cfg, nil)
	waitFor(t, 5*time.Second, "10 messages pulled", func() bool { return s.Stats().Pulled == 10 })
	handed := nextRows(t, s, 3, 5*time.Second)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Nacked != 7 || st.Held != 0 || st.NackedOnClose != 7 {
		t.Errorf("after Close stats %+v, want nacked=7 nacked_on_close=7 held=0", st)
	}
	// The counters add up: every message pulled was handed out, given back
	// by Close, or is still buffered.
	if st := s.Stats(); st.Pulled != st.HandedOut+st.NackedOnClose+st.Buffered {
		t.Errorf("pulled %d != handed_out %d + nacked_on_close %d + buffered %d",
			st.Pulled, st.HandedOut, st.NackedOnClose, st.Buffered)
	}

	// Another subscriber gets exactly the 7 never handed out, promptly.
	other := openTest(t, cfg, nil)
	back := nextRows(t, other, 7, 5*time.Second)
	for _, r := range back {
		for _, h := range handed {
			if r.id == h.id {
				t.Errorf("handed-out message %s was nacked by Close", r.id)
			}
		}
	}
	b, err := other.Next(context.Background(), 1, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if extra := rows(t, b); len(extra) != 0 {
		t.Errorf("got %d more messages; handed-out ones must keep their 60s deadline", len(extra))
	}
	for _, h := range handed {
		for _, m := range srv.Message(h.id).Modacks {
			if m.AckDeadline == 0 {
				t.Errorf("handed-out message %s was nacked", h.id)
			}
		}
	}
}

// Close ends every stream (half-close, then the server's EOF) before it
// nacks: a nack while a stream is open can redeliver into the dying stream.
func TestCloseEndsStreamsBeforeNacking(t *testing.T) {
	srv := newServer(t)
	publish(srv, 4)
	var f faults
	cfg := testConfig(srv)
	cfg.Streams = 2
	s := openTest(t, cfg, fast, f.options()...)
	waitFor(t, 5*time.Second, "4 messages pulled", func() bool { return s.Stats().Pulled == 4 })
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v", took)
	}
	f.mu.Lock()
	events := slices.Clone(f.events)
	f.mu.Unlock()
	nack := slices.Index(events, "ModifyAckDeadline")
	for _, want := range []string{"closesend 0", "closesend 1", "eof 0", "eof 1"} {
		if i := slices.Index(events, want); i < 0 || nack >= 0 && i > nack {
			t.Errorf("events %v: want %q before the nack", events, want)
		}
	}
	if nack < 0 || s.Stats().Nacked != 4 {
		t.Errorf("events %v, nacked %d: want the 4 buffered messages nacked", events, s.Stats().Nacked)
	}
}

// Close lets a lease extension in flight finish instead of cancelling it:
// a cancelled call reaches the server as an RST_STREAM, which Google's
// emulator fails to handle (tests/test_restart_in_one_app.py counts them).
// Only an extension still unanswered after the drain bound is cancelled.
func TestCloseLetsALeaseExtensionInFlightFinish(t *testing.T) {
	// Each case's outcome does not hang on the scheduler: 200 ms against a
	// 10 s bound, or an answer that never comes against 300 ms.
	for _, c := range []struct {
		name         string
		takes, bound time.Duration
		cancel       bool
	}{
		{"answered within the drain bound", 200 * time.Millisecond, 10 * time.Second, false},
		{"unanswered at it", time.Hour, 300 * time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t)
			publish(srv, 4)
			var f faults
			started := make(chan struct{})
			var once sync.Once
			f.slow = func(method string, req any) time.Duration {
				if r, ok := req.(*pb.ModifyAckDeadlineRequest); ok && r.AckDeadlineSeconds > 0 {
					once.Do(func() { close(started) })
					return c.takes
				}
				return 0
			}
			s := openTest(t, testConfig(srv), func(s *settings) { fast(s); s.drainTimeout = c.bound }, f.options()...)
			select {
			case <-started: // the 4 prefetched messages' lease is being extended
			case <-time.After(10 * time.Second):
				t.Fatal("no lease extension started")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			events := slices.Clone(f.events)
			f.mu.Unlock()
			outcome, other := "answered ModifyAckDeadline", "cancelled ModifyAckDeadline"
			if c.cancel {
				outcome, other = other, outcome
			}
			// The extension ends (answered, or cancelled at the bound)
			// before Close's nack, so it cannot re-lease what was nacked.
			i := slices.Index(events, outcome)
			if i < 0 || slices.Contains(events, other) || !slices.Contains(events[i+1:], "ModifyAckDeadline") {
				t.Errorf("events %v: want %q, then Close's nack, and no %q", events, outcome, other)
			}
		})
	}
}

// A no_pull subscriber opens no stream but acks ids pulled elsewhere
// (the Spark driver committing what executors read and released).
func TestNoPullAcksIDsPulledElsewhere(t *testing.T) {
	srv := newServer(t)
	ids := publish(srv, 2)
	reader := openTest(t, testConfig(srv), fast)
	got := nextRows(t, reader, 2, 5*time.Second)
	reader.Release(ackIDs(got))

	var f faults
	cfg := testConfig(srv)
	cfg.NoPull = true
	driver := openTest(t, cfg, fast, f.options()...)
	if err := driver.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if m := srv.Message(id); m.Acks != 1 {
			t.Errorf("message %s: %d acks, want 1", id, m.Acks)
		}
	}
	b, err := driver.Next(context.Background(), 1, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows(t, b)); n != 0 || f.streamCount() != 0 || driver.Stats().Pulled != 0 {
		t.Errorf("no_pull subscriber: %d rows, %d streams, stats %+v", n, f.streamCount(), driver.Stats())
	}
}

func TestSeveralStreams(t *testing.T) {
	srv := newServer(t)
	var f faults
	cfg := testConfig(srv)
	cfg.Streams = 3
	s := openTest(t, cfg, fast, f.options()...)
	waitFor(t, 5*time.Second, "3 streams open", func() bool { return f.streamCount() == 3 })
	ids := publish(srv, 30)
	got := nextRows(t, s, 30, 10*time.Second)
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r.id] {
			t.Errorf("message %s handed out twice", r.id)
		}
		seen[r.id] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("message %s not handed out", id)
		}
	}
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		srv := pstest.NewServer()
		defer srv.Close()
		ctx := context.Background()
		srv.GServer.CreateTopic(ctx, topicProto())
		srv.GServer.CreateSubscription(ctx, subProto())
		publish(srv, 20)
		mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
		cfg := testConfig(srv)
		cfg.Streams = 2
		s, err := open(ctx, cfg, mem, fast, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := nextRows(t, s, 10, 5*time.Second)
		if err := s.Ack(ackIDs(got)); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		mem.AssertSize(t, 0)
	}()
	var after int
	if !eventually(5*time.Second, func() bool { after = runtime.NumGoroutine(); return after <= before }) {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines before, %d after Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}
