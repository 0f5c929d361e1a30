package publisher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// seqProbe records what a sequencer sends and fails.
type seqProbe struct {
	sent   []*bundle
	failed map[*bundle]error
}

func newSeqProbe() (*seqProbe, *sequencer) {
	p := &seqProbe{failed: map[*bundle]error{}}
	return p, newSequencer(
		func(b *bundle) { p.sent = append(p.sent, b) },
		func(b *bundle, err error) { p.failed[b] = err },
	)
}

func TestSequencerOneInFlightPerKey(t *testing.T) {
	p, s := newSeqProbe()
	a1, a2, a3 := &bundle{key: "a"}, &bundle{key: "a"}, &bundle{key: "a"}
	b1 := &bundle{key: "b"}
	u1, u2 := &bundle{}, &bundle{}
	for _, b := range []*bundle{a1, a2, u1, b1, a3, u2} {
		s.submit(b)
	}
	if !slices.Equal(p.sent, []*bundle{a1, u1, b1, u2}) {
		t.Fatalf("sent %v; want a1, u1, b1, u2 (a2, a3 wait for a1)", p.sent)
	}
	s.done(a1, nil)
	if p.sent[len(p.sent)-1] != a2 || len(p.sent) != 5 {
		t.Fatal("a2 not sent after a1 completed")
	}
	s.done(a2, nil)
	s.done(a3, nil)
	if !slices.Equal(p.sent, []*bundle{a1, u1, b1, u2, a2, a3}) {
		t.Fatalf("order %v", p.sent)
	}
	if len(s.keys) != 1 { // b still busy; a is idle and forgotten
		t.Errorf("%d key states kept, want 1", len(s.keys))
	}
}

func TestSequencerFailurePausesKey(t *testing.T) {
	p, s := newSeqProbe()
	a1, a2, a3 := &bundle{key: "a"}, &bundle{key: "a"}, &bundle{key: "a"}
	b1 := &bundle{key: "b"}
	s.submit(a1)
	s.submit(a2)
	s.submit(b1)
	boom := errors.New("boom")
	s.done(a1, boom)
	if p.failed[a2] != boom {
		t.Errorf("queued a2 failed with %v, want the key's error", p.failed[a2])
	}
	s.submit(a3)
	if p.failed[a3] != boom {
		t.Errorf("later a3 failed with %v, want the key's error", p.failed[a3])
	}
	if slices.Contains(p.sent, a2) || slices.Contains(p.sent, a3) {
		t.Error("a message of the paused key was sent")
	}
	s.done(b1, nil) // other keys are unaffected
	b2 := &bundle{key: "b"}
	s.submit(b2)
	if p.sent[len(p.sent)-1] != b2 {
		t.Error("key b blocked by key a's failure")
	}
}

// keyedRows is rows of payload "<key>-<i>" for each key, interleaved.
func keyedRows(keys []string, perKey int) []row {
	var rows []row
	for i := range perKey {
		for _, k := range keys {
			rows = append(rows, row{payload: fmt.Sprintf("%s-%d", k, i), key: k})
		}
	}
	return rows
}

func TestOrderingEndToEnd(t *testing.T) {
	f := newFaultServer(t)
	// Simulated latency, so that a second request of a key would overlap
	// the first if the sequencer let it.
	f.setHook(func(ctx context.Context, _ *pubsubpb.PublishRequest) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	cfg := testConfig(f.addr)
	cfg.EnableMessageOrdering = true
	cfg.MaxBatchMessages = 3
	p := open(t, cfg)
	mem := checkedAlloc(t)
	keys := []string{"a", "b", "c"}
	rows := keyedRows(keys, 30)
	rows = append(rows, row{payload: "u-0"}, row{payload: "u-1"})
	publish(t, p, record(t, mem, rows))
	publish(t, p, record(t, mem, keyedRows(keys, 1))) // a second Publish call
	res := flush(t, p)
	if res.Published != int64(len(rows)+3) {
		t.Fatalf("published %d, want %d", res.Published, len(rows)+3)
	}
	got := map[string][]string{}
	for _, m := range f.fake.Messages() {
		got[m.OrderingKey] = append(got[m.OrderingKey], string(m.Data))
	}
	for _, k := range keys {
		var want []string
		for i := range 30 {
			want = append(want, fmt.Sprintf("%s-%d", k, i))
		}
		want = append(want, k+"-0") // from the second Publish
		if !slices.Equal(got[k], want) {
			t.Errorf("key %s arrived as %v, want row order %v", k, got[k], want)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		if f.maxPerKey[k] != 1 {
			t.Errorf("key %s had %d requests in flight at once, want 1", k, f.maxPerKey[k])
		}
	}
}

func TestOrderingKeysRunConcurrently(t *testing.T) {
	f := newFaultServer(t)
	// Every request waits until requests of all three keys were in flight
	// at once: that only happens if different keys are not serialized.
	var once sync.Once
	all := make(chan struct{})
	f.setHook(func(ctx context.Context, _ *pubsubpb.PublishRequest) error {
		deadline := time.Now().Add(5 * time.Second)
		for {
			f.mu.Lock()
			if f.inflight["a"] > 0 && f.inflight["b"] > 0 && f.inflight[""] > 0 {
				once.Do(func() { close(all) })
			}
			f.mu.Unlock()
			select {
			case <-all:
				return nil
			default:
			}
			if time.Now().After(deadline) {
				return status.Error(codes.FailedPrecondition, "keys were not in flight concurrently")
			}
			time.Sleep(time.Millisecond)
		}
	})
	cfg := testConfig(f.addr)
	cfg.EnableMessageOrdering = true
	p := open(t, cfg)
	mem := checkedAlloc(t)
	publish(t, p, record(t, mem, []row{{payload: "a", key: "a"}, {payload: "b", key: "b"}, {payload: "u"}}))
	if res := flush(t, p); res.Published != 3 {
		t.Errorf("published %d, want 3", res.Published)
	}
}

func TestOrderingFailureStopsKey(t *testing.T) {
	f := newFaultServer(t)
	// k-0 fails, but only once o-1 (the last row) was sent, so every row
	// is queued before the failure and Publish itself succeeds.
	f.setHook(func(ctx context.Context, req *pubsubpb.PublishRequest) error {
		if string(req.Messages[0].Data) != "k-0" {
			return nil
		}
		deadline := time.Now().Add(5 * time.Second)
		for !slices.ContainsFunc(f.requests(), func(r reqInfo) bool { return r.data[0] == "o-1" }) {
			if time.Now().After(deadline) {
				return status.Error(codes.Internal, "o-1 never arrived")
			}
			time.Sleep(time.Millisecond)
		}
		return status.Error(codes.PermissionDenied, "no k-0 for you")
	})
	cfg := testConfig(f.addr)
	cfg.EnableMessageOrdering = true
	cfg.MaxBatchMessages = 1 // one request per message
	p := open(t, cfg)
	mem := checkedAlloc(t)
	publish(t, p, record(t, mem, []row{
		{payload: "k-0", key: "k"}, {payload: "k-1", key: "k"}, {payload: "o-0", key: "o"},
		{payload: "k-2", key: "k"}, {payload: "o-1", key: "o"},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.Flush(ctx)
	if rpc.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), testTopic+": no k-0 for you") {
		t.Fatalf("Flush err %v, want PERMISSION_DENIED with the server message", err)
	}
	if res.Published != 2 {
		t.Errorf("published %d, want 2 (key o only)", res.Published)
	}
	for _, r := range f.requests() {
		if r.key == "k" && r.data[0] != "k-0" {
			t.Errorf("%v sent after k-0 failed", r.data)
		}
	}
	if got := serverData(f.fake); !slices.Equal(got, []string{"o-0", "o-1"}) {
		t.Errorf("server has %v, want [o-0 o-1]", got)
	}

	// A new Publisher starts with every key resumed.
	f.setHook(nil)
	p2 := open(t, cfg)
	publish(t, p2, record(t, mem, []row{{payload: "k-3", key: "k"}}))
	if res := flush(t, p2); res.Published != 1 {
		t.Errorf("new publisher published %d on key k, want 1", res.Published)
	}
}

func TestOrderingKeyRequiresEnable(t *testing.T) {
	srv := fakeServer(t)
	p := open(t, testConfig(srv.Addr))
	mem := checkedAlloc(t)
	rec := record(t, mem, []row{{payload: "x", key: "k"}})
	defer rec.Release()
	err := p.Publish(context.Background(), rec)
	if rpc.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "enable_message_ordering") {
		t.Fatalf("err %v, want INVALID_ARGUMENT telling to set enable_message_ordering", err)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d messages sent", n)
	}
}
