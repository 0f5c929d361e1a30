package publisher

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
)

// encodings records the grpc-encoding of every Publish request a server
// receives.
type encodings struct {
	mu  sync.Mutex
	got []string
}

func (e *encodings) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (e *encodings) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (e *encodings) HandleConn(context.Context, stats.ConnStats) {}
func (e *encodings) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok && strings.HasSuffix(h.FullMethod, "/Publish") {
		e.mu.Lock()
		e.got = append(e.got, h.Compression)
		e.mu.Unlock()
	}
}

func (e *encodings) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

// Requests at or over the threshold go gzipped, smaller ones plain, and
// the server reads both; without compression nothing is gzipped.
func TestCompressionAboveThreshold(t *testing.T) {
	for _, tc := range []struct {
		compression string
		want        []string // per request: the small one, then the big one
	}{
		{"gzip", []string{"", "gzip"}},
		{"none", []string{"", ""}},
	} {
		t.Run(tc.compression, func(t *testing.T) {
			enc := &encodings{}
			srv := newFaultServer(t, grpc.StatsHandler(enc))
			cfg := testConfig(srv.addr)
			cfg.Compression = tc.compression
			cfg.CompressionBytesThreshold = 1000
			p := open(t, cfg)
			mem := checkedAlloc(t)
			publish(t, p, payloads(t, mem, "small"))
			flush(t, p)
			publish(t, p, payloads(t, mem, strings.Repeat("z", 4000)))
			flush(t, p)
			if got := enc.list(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("request encodings %q, want %q", got, tc.want)
			}
			if got := serverData(srv.fake); len(got) != 2 || got[1] != strings.Repeat("z", 4000) {
				t.Errorf("server has %d messages; the compressed one must arrive whole", len(got))
			}
		})
	}
}

func TestCompressionRejectsUnknown(t *testing.T) {
	cfg := testConfig("localhost:1")
	cfg.Compression = "zstd"
	err := cfg.Validate()
	if rpc.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "none, gzip") {
		t.Fatalf("err %v, want INVALID_ARGUMENT listing none, gzip", err)
	}
}
