package publisher

import (
	"context"
	"fmt"
	"maps"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestOpenTopicNotFound(t *testing.T) {
	srv := pstest.NewServer()
	defer srv.Close()
	cfg := testConfig(srv.Addr)
	cfg.Topic = "projects/p/topics/missing"
	_, err := Open(context.Background(), cfg)
	if rpc.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "projects/p/topics/missing") {
		t.Fatalf("err %v, want NOT_FOUND naming the topic", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	cfg := testConfig(addr)
	cfg.OpenTimeoutMs = 300
	start := time.Now()
	_, err = Open(context.Background(), cfg)
	if rpc.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "open_timeout_ms=300") {
		t.Fatalf("err %v, want UNAVAILABLE naming %s", err, addr)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Open took %v with open_timeout_ms=300", el)
	}
}

func TestOpenToleratesNoGetPermission(t *testing.T) {
	srv := fakeServer(t, pstest.WithErrorInjection("GetTopic", codes.PermissionDenied, "publisher role only"))
	p := open(t, testConfig(srv.Addr))
	mem := checkedAlloc(t)
	publish(t, p, payloads(t, mem, "a"))
	if res := flush(t, p); res.Published != 1 {
		t.Errorf("published %d, want 1", res.Published)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	_, err := Open(context.Background(), Config{Topic: "bad"})
	if rpc.Code(err) != codes.InvalidArgument {
		t.Fatalf("err %v, want INVALID_ARGUMENT", err)
	}
}

func TestPublishRoundTrip(t *testing.T) {
	srv := fakeServer(t)
	p := open(t, testConfig(srv.Addr))
	mem := checkedAlloc(t)
	rows := []row{
		{payload: "one", attrs: map[string]string{"a": "1"}},
		{payload: "two"},
		{payload: "three", attrs: map[string]string{"b": "2", "c": ""}},
	}
	publish(t, p, record(t, mem, rows))
	publish(t, p, payloads(t, mem, "four", "five"))
	res := flush(t, p)
	wantBytes := int64(len("one"+"a"+"1") + len("two") + len("three"+"b"+"2"+"c") + len("four") + len("five"))
	if res != (Result{Published: 5, Bytes: wantBytes}) {
		t.Errorf("result %+v, want published 5, bytes %d, retries 0", res, wantBytes)
	}
	got := map[string]map[string]string{}
	for _, m := range srv.Messages() {
		got[string(m.Data)] = m.Attributes
	}
	want := map[string]map[string]string{
		"one": {"a": "1"}, "two": nil, "three": {"b": "2", "c": ""}, "four": nil, "five": nil,
	}
	if !maps.EqualFunc(got, want, func(a, b map[string]string) bool { return maps.Equal(a, b) }) {
		t.Errorf("server has %v, want %v", got, want)
	}
	// A second flush with nothing new reports the same totals.
	if again := flush(t, p); again != res {
		t.Errorf("second flush %+v, want %+v", again, res)
	}
}

func TestIDStampingAcrossPublishes(t *testing.T) {
	run := func() map[string]string {
		srv := fakeServer(t)
		cfg := testConfig(srv.Addr)
		cfg.IDAttribute, cfg.IDPrefix = "rid", "task3"
		p := open(t, cfg)
		mem := checkedAlloc(t)
		publish(t, p, payloads(t, mem, "a", "b"))
		publish(t, p, payloads(t, mem, "c"))
		flush(t, p)
		ids := map[string]string{}
		for _, m := range srv.Messages() {
			ids[string(m.Data)] = m.Attributes["rid"]
		}
		return ids
	}
	first, second := run(), run()
	want := map[string]string{"a": "task3-0", "b": "task3-1", "c": "task3-2"}
	if !maps.Equal(first, want) || !maps.Equal(second, want) {
		t.Errorf("ids %v then %v, want %v both times", first, second, want)
	}
}

func TestStartIDsRestartsNumberingUnderANewPrefix(t *testing.T) {
	srv := fakeServer(t)
	cfg := testConfig(srv.Addr)
	cfg.IDAttribute, cfg.IDPrefix = "rid", "task3"
	p := open(t, cfg)
	mem := checkedAlloc(t)
	publish(t, p, payloads(t, mem, "a", "b"))
	flush(t, p)
	if err := p.StartIDs("task4"); err != nil {
		t.Fatal(err)
	}
	publish(t, p, payloads(t, mem, "c"))
	flush(t, p)
	ids := map[string]string{}
	for _, m := range srv.Messages() {
		ids[string(m.Data)] = m.Attributes["rid"]
	}
	want := map[string]string{"a": "task3-0", "b": "task3-1", "c": "task4-0"}
	if !maps.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}

	plain := open(t, testConfig(srv.Addr))
	if err := plain.StartIDs("x"); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "id_attribute") {
		t.Errorf("StartIDs without id_attribute: %v, want INVALID_ARGUMENT naming id_attribute", err)
	}
}

func TestInvalidRecordSendsNothing(t *testing.T) {
	srv := fakeServer(t)
	cfg := testConfig(srv.Addr)
	cfg.IDAttribute, cfg.IDPrefix = "rid", "x"
	p := open(t, cfg)
	mem := checkedAlloc(t)
	big := strings.Repeat("x", maxMessageSize)
	rec := payloads(t, mem, "fine", big)
	err := p.Publish(context.Background(), rec)
	rec.Release()
	if rpc.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "row 1") {
		t.Fatalf("err %v, want INVALID_ARGUMENT naming row 1", err)
	}
	if res := flush(t, p); res.Published != 0 || len(srv.Messages()) != 0 {
		t.Errorf("published %d (server %d) after a rejected record, want 0", res.Published, len(srv.Messages()))
	}
	// A rejected record is not a publish failure and uses no row numbers.
	publish(t, p, payloads(t, mem, "next"))
	flush(t, p)
	if id := srv.Messages()[0].Attributes["rid"]; id != "x-0" {
		t.Errorf("id %q, want x-0", id)
	}
}

func TestBatchLimitsOnTheWire(t *testing.T) {
	f := newFaultServer(t)
	cfg := testConfig(f.addr)
	cfg.MaxBatchMessages = 7
	cfg.MaxBatchBytes = 3000
	p := open(t, cfg)
	mem := checkedAlloc(t)
	var rows []row
	for i := range 200 {
		rows = append(rows, row{payload: strings.Repeat("p", 100+(i*37)%700), attrs: map[string]string{"i": fmt.Sprint(i)}})
	}
	publish(t, p, record(t, mem, rows))
	if res := flush(t, p); res.Published != 200 {
		t.Fatalf("published %d, want 200", res.Published)
	}
	reqs := f.requests()
	byCount, byBytes := 0, 0
	for _, r := range reqs {
		if r.n > 7 || r.size > 3000 {
			t.Errorf("request of %d messages, %d bytes exceeds 7 / 3000", r.n, r.size)
		}
		if r.n == 7 {
			byCount++
		} else if r.size > 3000-500 {
			byBytes++
		}
	}
	if byCount == 0 || byBytes == 0 {
		t.Errorf("closed by count %d, by bytes %d: want both limits exercised", byCount, byBytes)
	}
}

func TestLingerSendsPartialBatch(t *testing.T) {
	srv := fakeServer(t)
	cfg := testConfig(srv.Addr)
	cfg.LingerMs = 20
	p := open(t, cfg)
	mem := checkedAlloc(t)
	publish(t, p, payloads(t, mem, "a", "b", "c"))
	// No Flush: the linger timer alone must send the partial batch.
	waitFor(t, 5*time.Second, "lingered batch to reach the server", func() bool { return len(srv.Messages()) == 3 })
}

func TestFlushSendsPartialBatch(t *testing.T) {
	srv := fakeServer(t)
	cfg := testConfig(srv.Addr)
	cfg.LingerMs = 600_000 // only Flush can send these
	p := open(t, cfg)
	mem := checkedAlloc(t)
	publish(t, p, payloads(t, mem, "a", "b", "c"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := p.Flush(ctx)
	if err != nil || res.Published != 3 || len(srv.Messages()) != 3 {
		t.Errorf("Flush = %+v, %v with %d on the server; want 3 published", res, err, len(srv.Messages()))
	}
}

// gate holds Publish requests in the fault server until opened.
type gate struct{ ch chan struct{} }

func newGate() *gate  { return &gate{ch: make(chan struct{})} }
func (g *gate) open() { close(g.ch) }
func (g *gate) hook(ctx context.Context, _ *pubsubpb.PublishRequest) error {
	select {
	case <-g.ch:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func TestBackpressure(t *testing.T) {
	f := newFaultServer(t)
	g := newGate()
	f.setHook(g.hook)
	cfg := testConfig(f.addr)
	cfg.MaxInFlightBytes = 8 << 10
	cfg.MaxBatchMessages = 2
	cfg.LingerMs = 1
	p := open(t, cfg)
	mem := checkedAlloc(t)
	var data []string
	for i := range 100 {
		data = append(data, fmt.Sprintf("%04d", i)+strings.Repeat("x", 1020))
	}
	rec := payloads(t, mem, data...)
	defer rec.Release()
	done := make(chan error, 1)
	go func() { done <- p.Publish(context.Background(), rec) }()

	waitFor(t, 5*time.Second, "Publish to block on max_in_flight_bytes", func() bool { return waiting(p.fc) == 1 })
	select {
	case err := <-done:
		t.Fatalf("Publish returned (%v) with 100 KiB pending against an 8 KiB bound", err)
	default:
	}
	g.open()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Publish did not resume once acks came in")
	}
	if res := flush(t, p); res.Published != 100 {
		t.Errorf("published %d, want 100", res.Published)
	}
	if _, peak, _ := p.fc.stats(); peak > cfg.MaxInFlightBytes {
		t.Errorf("peak in flight %d > bound %d", peak, cfg.MaxInFlightBytes)
	}
}

func TestTransientErrorsRetried(t *testing.T) {
	for _, c := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted,
		codes.Aborted, codes.Internal, codes.Unknown} {
		t.Run(c.String(), func(t *testing.T) {
			f := newFaultServer(t)
			var failures atomic.Int32
			f.setHook(func(context.Context, *pubsubpb.PublishRequest) error {
				if failures.Add(1) <= 2 {
					return status.Error(c, "try again")
				}
				return nil
			})
			p := open(t, testConfig(f.addr))
			mem := checkedAlloc(t)
			publish(t, p, payloads(t, mem, "a", "b"))
			res := flush(t, p)
			if res.Published != 2 || res.Retries != 2 {
				t.Errorf("result %+v, want 2 published after 2 retries", res)
			}
			if got := serverData(f.fake); len(got) != 2 {
				t.Errorf("server stored %v, want each message once", got)
			}
		})
	}
}

func TestRetryTimeoutFailsFlush(t *testing.T) {
	f := newFaultServer(t)
	f.setHook(func(context.Context, *pubsubpb.PublishRequest) error {
		return status.Error(codes.Unavailable, "backend down")
	})
	cfg := testConfig(f.addr)
	cfg.RetryInitialMs, cfg.RetryMaxMs, cfg.RetryTimeoutMs = 10, 40, 300
	p := open(t, cfg)
	mem := checkedAlloc(t)
	publish(t, p, payloads(t, mem, "a"))
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.Flush(ctx)
	if rpc.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), testTopic+": backend down") ||
		!strings.Contains(err.Error(), "retry_timeout_ms=300") {
		t.Fatalf("err %v, want UNAVAILABLE with the server message", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("gave up after %v, retry_timeout_ms=300", el)
	}
	if res.Retries < 3 || res.Published != 0 {
		t.Errorf("result %+v, want >= 3 retries and nothing published", res)
	}
}

func TestDefinitiveErrors(t *testing.T) {
	for _, c := range []codes.Code{codes.PermissionDenied, codes.NotFound, codes.InvalidArgument, codes.FailedPrecondition} {
		t.Run(c.String(), func(t *testing.T) {
			srv := fakeServer(t, pstest.WithErrorInjection("Publish", c, "server says no"))
			p := open(t, testConfig(srv.Addr))
			mem := checkedAlloc(t)
			publish(t, p, payloads(t, mem, "a"))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := p.Flush(ctx)
			want := testTopic + ": server says no"
			if rpc.Code(err) != c || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), testTopic) {
				t.Fatalf("Flush err %v, want code %v and %q", err, c, want)
			}
			if res.Retries != 0 || res.Published != 0 {
				t.Errorf("result %+v, want no retries, nothing published", res)
			}
			rec := payloads(t, mem, "b")
			defer rec.Release()
			if err := p.Publish(context.Background(), rec); rpc.Code(err) != c {
				t.Errorf("later Publish err %v, want the first failure (%v)", err, c)
			}
		})
	}
}

func TestFlushNothingPendingReturnsAtOnce(t *testing.T) {
	srv := fakeServer(t)
	p := open(t, testConfig(srv.Addr))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // even a dead context: there is nothing to wait for
	res, err := p.Flush(ctx)
	if err != nil || res != (Result{}) {
		t.Errorf("Flush = %+v, %v; want zero result, nil", res, err)
	}
}

func TestFlushRespectsDeadline(t *testing.T) {
	f := newFaultServer(t)
	g := newGate()
	f.setHook(g.hook)
	p := open(t, testConfig(f.addr))
	mem := checkedAlloc(t)
	publish(t, p, payloads(t, mem, "held"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Flush(ctx)
	if rpc.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "1 messages not acknowledged") {
		t.Fatalf("err %v, want DEADLINE_EXCEEDED", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Flush took %v with a 100ms deadline", el)
	}
	g.open()
	if res := flush(t, p); res.Published != 1 {
		t.Errorf("published %d after the gate opened, want 1", res.Published)
	}
}

func TestClosedPublisher(t *testing.T) {
	srv := fakeServer(t)
	p := open(t, testConfig(srv.Addr))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	mem := checkedAlloc(t)
	rec := payloads(t, mem, "a")
	defer rec.Release()
	if err := p.Publish(context.Background(), rec); rpc.Code(err) != codes.FailedPrecondition {
		t.Errorf("Publish after Close: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := p.Flush(context.Background()); rpc.Code(err) != codes.FailedPrecondition {
		t.Errorf("Flush after Close: %v, want FAILED_PRECONDITION", err)
	}
}

func TestCloseReleasesUnsentMessages(t *testing.T) {
	srv := fakeServer(t)
	cfg := testConfig(srv.Addr)
	cfg.LingerMs = 600_000 // the messages stay in an open batch
	p := open(t, cfg)
	mem := checkedAlloc(t)
	publish(t, p, payloads(t, mem, "a", "b"))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	used, _, _ := p.fc.stats()
	p.mu.Lock()
	pending := p.pending
	p.mu.Unlock()
	if used != 0 || pending != 0 {
		t.Errorf("after Close: %d bytes in flight, %d messages pending; want 0, 0", used, pending)
	}
}

func TestCloseLeaksNoGoroutines(t *testing.T) {
	f := newFaultServer(t)
	g := newGate() // never opened: requests stay in flight until Close
	f.setHook(g.hook)
	// Warm up: the first connection may start process-wide gRPC goroutines.
	warm, err := Open(context.Background(), testConfig(f.addr))
	if err != nil {
		t.Fatal(err)
	}
	warm.Close()
	before := runtime.NumGoroutine()

	cfg := testConfig(f.addr)
	cfg.MaxInFlightBytes = 4 << 10
	cfg.MaxBatchMessages = 1
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mem := checkedAlloc(t)
	var data []string
	for range 20 {
		data = append(data, strings.Repeat("x", 1000))
	}
	rec := payloads(t, mem, data...)
	defer rec.Release()
	done := make(chan error, 1)
	go func() { done <- p.Publish(context.Background(), rec) }()
	waitFor(t, 5*time.Second, "Publish to block", func() bool { return waiting(p.fc) == 1 })

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if rpc.Code(err) != codes.FailedPrecondition {
			t.Errorf("blocked Publish returned %v, want FAILED_PRECONDITION (closed)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Publish still blocked after Close")
	}
	waitFor(t, 5*time.Second, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if used, _, _ := p.fc.stats(); used != 0 {
		t.Errorf("%d flow-control bytes still held after Close", used)
	}
}

func TestConcurrentRequestsBounded(t *testing.T) {
	f := newFaultServer(t)
	f.setHook(func(context.Context, *pubsubpb.PublishRequest) error {
		time.Sleep(2 * time.Millisecond) // latency so requests overlap
		return nil
	})
	cfg := testConfig(f.addr)
	cfg.MaxBatchMessages = 1
	cfg.MaxConcurrentRequests = 3
	p := open(t, cfg)
	mem := checkedAlloc(t)
	var data []string
	for i := range 60 {
		data = append(data, fmt.Sprint(i))
	}
	publish(t, p, payloads(t, mem, data...))
	flush(t, p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxConc > 3 || f.maxConc < 2 {
		t.Errorf("max concurrent requests %d, want 2..3", f.maxConc)
	}
	got := serverData(f.fake)
	slices.Sort(got)
	slices.Sort(data)
	if !slices.Equal(got, data) {
		t.Errorf("server has %d messages, want the 60 published once each", len(got))
	}
}

func BenchmarkPublish1KB(b *testing.B) {
	srv := fakeServer(b)
	p := open(b, testConfig(srv.Addr))
	rec := payloads1KB(b)
	defer rec.Release()
	b.SetBytes(1000 * 1024)
	for b.Loop() {
		if err := p.Publish(context.Background(), rec); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		srv.ClearMessages() // keep pstest's memory flat
		b.StartTimer()
	}
}
