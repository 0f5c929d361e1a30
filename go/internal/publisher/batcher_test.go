package publisher

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/proto"
)

// collector gathers emitted bundles.
type collector struct {
	mu sync.Mutex
	bs []*bundle
}

func (c *collector) emit(b *bundle) { c.mu.Lock(); c.bs = append(c.bs, b); c.mu.Unlock() }

func (c *collector) bundles() []*bundle {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*bundle(nil), c.bs...)
}

func msg(data string, key string, attrs map[string]string) outMsg {
	m := &pubsubpb.PubsubMessage{Data: []byte(data), OrderingKey: key, Attributes: attrs}
	size := len(data) + len(key)
	for k, v := range attrs {
		size += len(k) + len(v)
	}
	return outMsg{entry: entryOf(m), key: key, size: int64(size)}
}

func TestBatcherWireSizeIsExact(t *testing.T) {
	var c collector
	b := newBatcher(testTopic, 1000, 1<<30, time.Hour, c.emit)
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		attrs := map[string]string{}
		for j := range r.IntN(4) {
			attrs[fmt.Sprint("k", j)] = strings.Repeat("v", r.IntN(300))
		}
		b.add(msg(strings.Repeat("d", r.IntN(5000)), "", attrs))
	}
	b.flush()
	bs := c.bundles()
	if len(bs) != 1 {
		t.Fatalf("%d bundles, want 1", len(bs))
	}
	req := bs[0].request(testTopic)
	if bs[0].wire != proto.Size(req) {
		t.Errorf("accounted %d bytes, encoded request is %d", bs[0].wire, proto.Size(req))
	}
	if bs[0].flow != int64(bs[0].wire-b.baseWire) {
		t.Errorf("flow %d, want %d", bs[0].flow, bs[0].wire-b.baseWire)
	}
}

func TestBatcherBounds(t *testing.T) {
	for _, tc := range []struct {
		name             string
		maxMsgs, maxByte int
	}{
		{"count bound", 7, 1 << 20},
		{"byte bound", 1000, 2000},
		{"both", 5, 900},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c collector
			b := newBatcher(testTopic, tc.maxMsgs, tc.maxByte, time.Hour, c.emit)
			r := rand.New(rand.NewPCG(3, 4))
			total := 0
			for range 500 {
				b.add(msg(strings.Repeat("x", 20+r.IntN(300)), "", map[string]string{"a": "b"}))
				total++
			}
			b.flush()
			got, hitBytes := 0, false
			for _, bu := range c.bundles() {
				size := proto.Size(bu.request(testTopic))
				if len(bu.msgs) > tc.maxMsgs || size > tc.maxByte {
					t.Errorf("bundle of %d messages, %d bytes exceeds %d/%d", len(bu.msgs), size, tc.maxMsgs, tc.maxByte)
				}
				hitBytes = hitBytes || (len(bu.msgs) < tc.maxMsgs && size > tc.maxByte-400)
				got += len(bu.msgs)
			}
			if got != total {
				t.Errorf("%d messages emitted, want %d", got, total)
			}
			if tc.maxByte < 1<<20 && !hitBytes {
				t.Error("no bundle was closed by the byte bound")
			}
		})
	}
}

func TestBatcherOversizeMessageGoesAlone(t *testing.T) {
	var c collector
	b := newBatcher(testTopic, 100, 1000, time.Hour, c.emit)
	b.add(msg("small", "", nil))
	b.add(msg(strings.Repeat("x", 5000), "", nil))
	b.add(msg("after", "", nil))
	b.flush()
	var sizes []int
	for _, bu := range c.bundles() {
		sizes = append(sizes, len(bu.msgs))
	}
	if fmt.Sprint(sizes) != "[1 1 1]" {
		t.Errorf("bundle sizes %v, want [1 1 1]", sizes)
	}
}

func TestBatcherKeysSeparate(t *testing.T) {
	var c collector
	b := newBatcher(testTopic, 100, 1<<20, time.Hour, c.emit)
	for i := range 6 {
		b.add(msg(fmt.Sprint(i), []string{"", "a", "b"}[i%3], nil))
	}
	b.flush()
	bs := c.bundles()
	if len(bs) != 3 {
		t.Fatalf("%d bundles, want one per key", len(bs))
	}
	for _, bu := range bs {
		for _, e := range bu.msgs {
			if m := pbOf(t, outMsg{entry: e}); m.OrderingKey != bu.key {
				t.Errorf("message with key %q in bundle of key %q", m.OrderingKey, bu.key)
			}
		}
	}
}

func TestBatcherLinger(t *testing.T) {
	var c collector
	b := newBatcher(testTopic, 100, 1<<20, 10*time.Millisecond, c.emit)
	b.add(msg("a", "", nil))
	b.add(msg("b", "", nil))
	// Usually one bundle; two if the machine stalls between the adds.
	waitFor(t, 5*time.Second, "linger to emit the partial bundles", func() bool {
		n := 0
		for _, bu := range c.bundles() {
			n += len(bu.msgs)
		}
		return n == 2
	})
}

func TestBatcherStop(t *testing.T) {
	var c collector
	b := newBatcher(testTopic, 100, 1<<20, 10*time.Millisecond, c.emit)
	b.add(msg("a", "", nil))
	left := b.stop()
	if len(left) != 1 || len(left[0].msgs) != 1 {
		t.Fatalf("stop returned %v, want the one open bundle", left)
	}
	if b.add(msg("b", "", nil)) {
		t.Error("add accepted a message after stop")
	}
	time.Sleep(30 * time.Millisecond) // past the linger: a stopped timer must not emit
	if n := len(c.bundles()); n != 0 {
		t.Errorf("%d bundles emitted after stop", n)
	}
}
