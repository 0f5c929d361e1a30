package publisher

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// batchOf is n 1 KB payloads named tag-0 .. tag-(n-1), each filled with
// its own byte, so that a payload overwritten by a later batch's rows
// shows on the server.
func batchOf(tag string, n int) []string {
	out := make([]string, n)
	for i := range out {
		name := fmt.Sprintf("%s-%d:", tag, i)
		out[i] = name + strings.Repeat(string(rune('a'+i%26)), 1024-len(name))
	}
	return out
}

func freeChunks(p *Publisher) []*chunk {
	p.chunks.mu.Lock()
	defer p.chunks.mu.Unlock()
	return slices.Clone(p.chunks.free)
}

// A chunk is reused only once every request holding its rows is done
// (acknowledged, after retries) and freed by gRPC: batches published
// while earlier ones are held up, failed and retried reach the server
// intact, and once all is flushed the chunks serve the next batches.
func TestChunksReusedOnlyOnceSent(t *testing.T) {
	f := newFaultServer(t)
	g := newGate()
	var calls atomic.Int32
	f.setHook(func(ctx context.Context, req *pubsubpb.PublishRequest) error {
		if calls.Add(1)%3 == 1 {
			return status.Error(codes.Unavailable, "try again")
		}
		return g.hook(ctx, req)
	})
	cfg := testConfig(f.addr)
	cfg.MaxBatchMessages = 40
	p := open(t, cfg)
	mem := checkedAlloc(t)
	var want []string
	for b := range 6 {
		data := batchOf(fmt.Sprintf("b%d", b), 100)
		want = append(want, data...)
		publish(t, p, payloads(t, mem, data...))
	}
	if n := len(freeChunks(p)); n != 0 {
		t.Fatalf("%d chunks free while every batch is still in flight", n)
	}
	g.open()
	if res := flush(t, p); res.Published != int64(len(want)) {
		t.Fatalf("published %d, want %d", res.Published, len(want))
	}
	check := func() {
		t.Helper()
		got := serverData(f.fake)
		slices.Sort(got)
		sorted := slices.Sorted(slices.Values(want))
		if !slices.Equal(got, sorted) {
			t.Fatalf("the server has %d messages, not the %d published intact", len(got), len(sorted))
		}
	}
	check()
	var free []*chunk
	waitFor(t, 5*time.Second, "the chunks back in the pool", func() bool {
		free = freeChunks(p)
		return len(free) == maxFreeChunks
	})
	for b := range 3 {
		data := batchOf(fmt.Sprintf("again%d", b), 100)
		want = append(want, data...)
		publish(t, p, payloads(t, mem, data...))
		if len(p.scratch) == 0 || !slices.Contains(free, p.scratch[0].chunk) {
			t.Errorf("batch %d after the flush was not encoded into a free chunk", b)
		}
	}
	flush(t, p)
	check()
}

func TestChunkPoolKeepsTheLargest(t *testing.T) {
	var cp chunkPool
	var cs []*chunk
	for _, n := range []int{100, 400, 200, 300} {
		cs = append(cs, cp.get(n))
	}
	for _, c := range cs {
		c.release()
	}
	var caps []int
	for _, c := range cp.free {
		caps = append(caps, cap(c.buf))
	}
	slices.Sort(caps)
	if want := []int{200 + 25, 300 + 37, 400 + 50}; !slices.Equal(caps, want) {
		t.Errorf("free chunks of %v bytes, want %v", caps, want)
	}
	if c := cp.get(250); cap(c.buf) != 337 || len(c.buf) != 0 {
		t.Errorf("a 250-byte get took a chunk of cap %d, len %d; want the free 337-byte one, empty", cap(c.buf), len(c.buf))
	}
}
