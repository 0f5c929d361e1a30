package subscriber

import (
	"context"
	"encoding/json"
	"fmt"
	"google.golang.org/protobuf/proto"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

const (
	testTopic = "projects/p/topics/t"
	testSub   = "projects/p/subscriptions/s"
)

// newServer starts pstest with topic testTopic and subscription testSub.
func newServer(t testing.TB) *pstest.Server {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()
	if _, err := srv.GServer.CreateTopic(ctx, topicProto()); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.GServer.CreateSubscription(ctx, subProto()); err != nil {
		t.Fatal(err)
	}
	return srv
}

func topicProto() *pb.Topic { return &pb.Topic{Name: testTopic} }

func subProto() *pb.Subscription {
	return &pb.Subscription{Name: testSub, Topic: testTopic, AckDeadlineSeconds: 10}
}

// jsonKeys lists the keys v marshals to.
func jsonKeys(t testing.TB, v any) []string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func publish(srv *pstest.Server, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = srv.Publish(testTopic, []byte(fmt.Sprintf("payload-%d", i)), map[string]string{"i": fmt.Sprint(i)})
	}
	return ids
}

func testConfig(srv *pstest.Server) Config {
	return Config{Options: clientopt.Options{EmulatorHost: srv.Addr}, Subscription: testSub}
}

// fast shortens timings so tests run in seconds: a 1 s ack deadline with
// lease ticks of 100 ms, quick reconnects.
func fast(s *settings) {
	s.ackDeadline = time.Second
	s.prefetchLease = time.Second
	s.leaseTick = 100 * time.Millisecond
	s.retry = rpc.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	s.closeTimeout = 5 * time.Second
}

// openTest opens a subscriber with a checked allocator. Cleanup closes it
// and asserts no Arrow memory and none of its goroutines are left.
func openTest(t testing.TB, cfg Config, tune func(*settings), extra ...option.ClientOption) *Subscriber {
	t.Helper()
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	s, err := open(context.Background(), cfg, mem, tune, extra)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	openSubscribers.Add(1)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		mem.AssertSize(t, 0)
		if openSubscribers.Add(-1) == 0 {
			checkNoWorkers(t)
		}
	})
	return s
}

// openSubscribers counts subscribers of openTest not yet cleaned up: the
// worker check only means something once all are closed.
var openSubscribers atomic.Int32

// workerFrames identify goroutines started by this package.
var workerFrames = []string{"subscriber.(*stream).", "subscriber.(*keepAlive).", "subscriber.(*Subscriber).leaseLoop", "subscriber.(*acker).", "subscriber.(*decodePool)."}

// checkNoWorkers fails if goroutines of this package outlive their
// subscriber (bounded wait: they exit right after Close returns).
func checkNoWorkers(t testing.TB) {
	t.Helper()
	var leaked string
	ok := eventually(2*time.Second, func() bool {
		leaked = ""
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			for _, f := range workerFrames {
				if strings.Contains(g, f) {
					leaked += g + "\n\n"
					break
				}
			}
		}
		return leaked == ""
	})
	if !ok {
		t.Errorf("goroutines left after Close:\n%s", leaked)
	}
}

// eventually polls cond every 10 ms until it holds or timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !eventually(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// row is one handed-out message.
type row struct {
	id, ackID, payload string
	attrs              map[string]string
}

// rows extracts and releases a batch.
func rows(t testing.TB, b *Batch) []row {
	t.Helper()
	defer b.Release()
	if !b.Record.Schema().Equal(rawbatch.Schema()) {
		t.Fatalf("batch schema %v, want the raw schema", b.Record.Schema())
	}
	if int(b.Record.NumRows()) != b.AckIDs.Len() {
		t.Fatalf("%d rows but %d ack ids", b.Record.NumRows(), b.AckIDs.Len())
	}
	ids := b.Record.Column(rawbatch.ColMessageID).(*array.String)
	payload := b.Record.Column(rawbatch.ColPayload).(*array.Binary)
	attrs := b.Record.Column(rawbatch.ColAttributes).(*array.Map)
	keys, items := attrs.Keys().(*array.String), attrs.Items().(*array.String)
	out := make([]row, ids.Len())
	for i := range out {
		// Arrow strings alias the batch's buffers: copy before release.
		out[i] = row{id: strings.Clone(ids.Value(i)), ackID: strings.Clone(b.AckIDs.Value(i)), payload: string(payload.Value(i)), attrs: map[string]string{}}
		start, end := attrs.ValueOffsets(i)
		for j := start; j < end; j++ {
			out[i].attrs[strings.Clone(keys.Value(int(j)))] = strings.Clone(items.Value(int(j)))
		}
	}
	return out
}

// nextRows calls Next until n rows came or timeout passes.
func nextRows(t testing.TB, s *Subscriber, n int, timeout time.Duration) []row {
	t.Helper()
	var out []row
	deadline := time.Now().Add(timeout)
	for len(out) < n && time.Now().Before(deadline) {
		b, err := s.Next(context.Background(), n-len(out), 100*time.Millisecond)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, rows(t, b)...)
	}
	if len(out) != n {
		t.Fatalf("got %d rows in %v, want %d", len(out), timeout, n)
	}
	return out
}

func ackIDs(rs []row) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ackID
	}
	return ids
}

// faults is a client-side gRPC interceptor over a real server: it records
// StreamingPull requests and unary ack/modack calls, and injects errors.
type faults struct {
	mu       sync.Mutex
	initial  []*pb.StreamingPullRequest // first request of each stream
	streams  int
	unary    map[string][]int // method -> ack id count per call
	modacks  []int32          // deadlines of ModifyAckDeadline calls
	recvErr  func(stream int) error
	silence  func(stream int, res *pb.StreamingPullResponse) bool
	unaryErr func(method string, call int) error
	// idsErr, if set, may fail a call given its ack ids (before it is sent).
	idsErr func(method string, call int, ids []string) error
	// slow, if set, makes a call take that long before it is sent (a
	// loaded server): the event "answered Method" follows its answer, or
	// "cancelled Method" its cancellation meanwhile.
	slow   func(method string, req any) time.Duration
	events []string // "closesend N", "eof N", "Method", "answered Method", "cancelled Method" in order
}

func (f *faults) event(e string) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
}

func (f *faults) options() []option.ClientOption {
	return []option.ClientOption{
		option.WithGRPCDialOption(grpc.WithStreamInterceptor(f.stream)),
		option.WithGRPCDialOption(grpc.WithUnaryInterceptor(f.unaryCall)),
	}
}

func (f *faults) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || !strings.HasSuffix(method, "/StreamingPull") {
		return cs, err
	}
	f.mu.Lock()
	n := f.streams
	f.streams++
	f.mu.Unlock()
	return &faultStream{ClientStream: cs, f: f, n: n}, nil
}

type faultStream struct {
	grpc.ClientStream
	f      *faults
	n      int
	sent   int
	silent bool
}

func (s *faultStream) SendMsg(m any) error {
	if s.sent == 0 {
		s.f.mu.Lock()
		s.f.initial = append(s.f.initial, m.(*pb.StreamingPullRequest))
		s.f.mu.Unlock()
	}
	s.sent++
	return s.ClientStream.SendMsg(m)
}

func (s *faultStream) CloseSend() error {
	s.f.event(fmt.Sprint("closesend ", s.n))
	return s.ClientStream.CloseSend()
}

func (s *faultStream) RecvMsg(m any) error {
	s.f.mu.Lock()
	recvErr, silence := s.f.recvErr, s.f.silence
	s.f.mu.Unlock()
	if recvErr != nil {
		if err := recvErr(s.n); err != nil {
			return err
		}
	}
	if s.silent {
		// A dead peer: nothing more arrives until the call is torn down.
		<-s.Context().Done()
		return s.Context().Err()
	}
	if err := s.ClientStream.RecvMsg(m); err != nil {
		if err == io.EOF {
			s.f.event(fmt.Sprint("eof ", s.n))
		}
		return err
	}
	// Deliver this response, then nothing more.
	if silence != nil {
		var res pb.StreamingPullResponse
		if err := proto.Unmarshal(m.(*rawResponse).data.Materialize(), &res); err != nil {
			return err
		}
		s.silent = silence(s.n, &res)
	}
	return nil
}

func (f *faults) unaryCall(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var idList []string
	switch r := req.(type) {
	case *pb.AcknowledgeRequest:
		idList = r.AckIds
	case *pb.ModifyAckDeadlineRequest:
		idList = r.AckIds
	}
	ids := len(idList)
	name := method[strings.LastIndex(method, "/")+1:]
	f.mu.Lock()
	if f.unary == nil {
		f.unary = map[string][]int{}
	}
	f.unary[name] = append(f.unary[name], ids)
	if r, ok := req.(*pb.ModifyAckDeadlineRequest); ok {
		f.modacks = append(f.modacks, r.AckDeadlineSeconds)
	}
	f.events = append(f.events, name)
	call := len(f.unary[name])
	unaryErr, idsErr := f.unaryErr, f.idsErr
	f.mu.Unlock()
	if unaryErr != nil {
		if err := unaryErr(name, call); err != nil {
			return err
		}
	}
	if idsErr != nil {
		if err := idsErr(name, call, idList); err != nil {
			return err
		}
	}
	f.mu.Lock()
	slow := f.slow
	f.mu.Unlock()
	if slow != nil {
		if d := slow(name, req); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				f.event("cancelled " + name)
				return status.FromContextError(ctx.Err()).Err()
			}
			err := invoker(ctx, method, req, reply, cc, opts...)
			f.event("answered " + name)
			return err
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (f *faults) calls(method string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.unary[method]...)
}

func (f *faults) streamCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams
}

// openFiveHeld publishes n messages to a new server and opens a subscriber
// whose flow control admits 5 (acks deadline 60 s, so none lapses in a
// test); it returns once 5 are pulled, flow control full.
func openFiveHeld(t *testing.T, n int, tune func(*settings)) (*pstest.Server, *Subscriber) {
	t.Helper()
	srv := newServer(t)
	publish(srv, n)
	cfg := testConfig(srv)
	cfg.MaxOutstandingMessages = 5
	cfg.AckDeadlineSeconds = 60
	s := openTest(t, cfg, tune)
	waitFor(t, 5*time.Second, "5 messages pulled", func() bool { return s.Stats().Pulled >= 5 })
	return srv, s
}
