package publisher

import (
	"context"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

const testTopic = "projects/p/topics/t"

// fakeServer is pstest with the topic created.
func fakeServer(t testing.TB, opts ...pstest.ServerReactorOption) *pstest.Server {
	t.Helper()
	srv := pstest.NewServer(opts...)
	t.Cleanup(func() { srv.Close() })
	if _, err := srv.GServer.CreateTopic(context.Background(), &pubsubpb.Topic{Name: testTopic}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// reqInfo is what the fault server saw of one Publish request.
type reqInfo struct {
	size int // proto.Size of the request as received
	n    int
	key  string
	data []string
}

// faultServer is a gRPC Publisher service in front of pstest: every call
// goes to pstest after an optional hook that may delay or fail it. It
// records each Publish request and the concurrency it observed.
type faultServer struct {
	pubsubpb.UnimplementedPublisherServer
	fake *pstest.Server
	addr string

	mu         sync.Mutex
	hook       func(ctx context.Context, req *pubsubpb.PublishRequest) error
	reqs       []reqInfo
	inflight   map[string]int // by ordering key
	maxPerKey  map[string]int
	concurrent int
	maxConc    int
}

func newFaultServer(t testing.TB, opts ...grpc.ServerOption) *faultServer {
	t.Helper()
	f := &faultServer{fake: fakeServer(t), inflight: map[string]int{}, maxPerKey: map[string]int{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(16 << 20)}, opts...)...)
	pubsubpb.RegisterPublisherServer(gs, f)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	f.addr = lis.Addr().String()
	return f
}

func (f *faultServer) setHook(h func(ctx context.Context, req *pubsubpb.PublishRequest) error) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

func (f *faultServer) GetTopic(ctx context.Context, req *pubsubpb.GetTopicRequest) (*pubsubpb.Topic, error) {
	return f.fake.GServer.GetTopic(ctx, req)
}

func (f *faultServer) Publish(ctx context.Context, req *pubsubpb.PublishRequest) (*pubsubpb.PublishResponse, error) {
	info := reqInfo{size: proto.Size(req), n: len(req.Messages)}
	if len(req.Messages) > 0 {
		info.key = req.Messages[0].OrderingKey
	}
	for _, m := range req.Messages {
		info.data = append(info.data, string(m.Data))
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, info)
	f.inflight[info.key]++
	f.maxPerKey[info.key] = max(f.maxPerKey[info.key], f.inflight[info.key])
	f.concurrent++
	f.maxConc = max(f.maxConc, f.concurrent)
	hook := f.hook
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight[info.key]--
		f.concurrent--
		f.mu.Unlock()
	}()
	if hook != nil {
		if err := hook(ctx, req); err != nil {
			return nil, err
		}
	}
	return f.fake.GServer.Publish(ctx, req)
}

func (f *faultServer) requests() []reqInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// testConfig is a Config for addr with fast retries.
func testConfig(addr string) Config {
	return Config{
		Options:        clientopt.Options{EmulatorHost: addr},
		Topic:          testTopic,
		RetryInitialMs: 5,
		RetryMaxMs:     50,
		RetryTimeoutMs: 10_000,
		OpenTimeoutMs:  2_000,
	}
}

func open(t testing.TB, cfg Config) *Publisher {
	t.Helper()
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// row is one input row; nil attrs and "" key leave the cell null.
type row struct {
	payload string
	attrs   map[string]string
	key     string
}

// checkedAlloc is a C allocator that fails the test on leaks.
func checkedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

var (
	mapType    = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	fullSchema = arrow.NewSchema([]arrow.Field{
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
		{Name: "attributes", Type: mapType, Nullable: true},
		{Name: "ordering_key", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
)

// record builds a record with payload, attributes and ordering_key.
func record(t testing.TB, mem memory.Allocator, rows []row) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, fullSchema)
	defer b.Release()
	pb := b.Field(0).(*array.BinaryBuilder)
	ab := b.Field(1).(*array.MapBuilder)
	kb := b.Field(2).(*array.StringBuilder)
	for _, r := range rows {
		pb.Append([]byte(r.payload))
		if r.attrs == nil {
			ab.AppendNull()
		} else {
			ab.Append(true)
			for _, k := range slices.Sorted(maps.Keys(r.attrs)) {
				ab.KeyBuilder().(*array.StringBuilder).Append(k)
				ab.ItemBuilder().(*array.StringBuilder).Append(r.attrs[k])
			}
		}
		if r.key == "" {
			kb.AppendNull()
		} else {
			kb.Append(r.key)
		}
	}
	return b.NewRecordBatch()
}

// payloads builds a payload-only record.
func payloads(t testing.TB, mem memory.Allocator, data ...string) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "payload", Type: arrow.BinaryTypes.Binary}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, d := range data {
		b.Field(0).(*array.BinaryBuilder).Append([]byte(d))
	}
	return b.NewRecordBatch()
}

// payloads1KB is the benchmarks' record: 1000 payloads of 1 KB.
func payloads1KB(b *testing.B) arrow.RecordBatch {
	data := make([]string, 1000)
	for i := range data {
		data[i] = strings.Repeat("b", 1024)
	}
	return payloads(b, checkedAlloc(b), data...)
}

// publish publishes rec and releases it, as the C layer does.
func publish(t testing.TB, p *Publisher, rec arrow.RecordBatch) {
	t.Helper()
	defer rec.Release()
	if err := p.Publish(context.Background(), rec); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

func flush(t testing.TB, p *Publisher) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := p.Flush(ctx)
	if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	return res
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// serverData is the payloads pstest stored, in arrival order.
func serverData(srv *pstest.Server) []string {
	var out []string
	for _, m := range srv.Messages() {
		out = append(out, string(m.Data))
	}
	return out
}
