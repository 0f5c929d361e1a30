package publisher

import (
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/proto"
)

// bundle is the messages of one Publish request; all share one ordering
// key because the service orders per request and key.
type bundle struct {
	key   string
	msgs  [][]byte // encoded entries of PublishRequest.messages (outMsg.entry)
	wire  int      // encoded size of the PublishRequest carrying msgs
	bytes int64    // sum of message sizes (Result.Bytes)
	flow  int64    // flow-control bytes charged for msgs
	timer *time.Timer

	// chunks are the buffers msgs lie in, each referenced once; they are
	// released when holds, one for the bundle's completion and one per
	// buffer handed to gRPC not yet freed by it, drops to 0.
	chunks []*chunk
	holds  atomic.Int32
}

// hold keeps the bundle's chunks from reuse until the matching drop.
func (b *bundle) hold() { b.holds.Add(1) }

// drop ends a hold; the last releases the chunks.
func (b *bundle) drop() {
	if b.holds.Add(-1) != 0 {
		return
	}
	for _, c := range b.chunks {
		c.release()
	}
	b.chunks = nil
}

// batcher groups messages per ordering key into bundles bounded by count
// and encoded bytes, and closes a partial bundle after the linger time.
// Closed bundles go to emit in the order they were closed.
type batcher struct {
	maxMsgs  int
	maxBytes int
	linger   time.Duration
	baseWire int // encoded size of a request with the topic and no messages
	emit     func(*bundle)

	mu      sync.Mutex
	open    map[string]*bundle
	stopped bool
}

func newBatcher(topic string, maxMsgs, maxBytes int, linger time.Duration, emit func(*bundle)) *batcher {
	return &batcher{
		maxMsgs:  maxMsgs,
		maxBytes: maxBytes,
		linger:   linger,
		baseWire: proto.Size(&pubsubpb.PublishRequest{Topic: topic}),
		emit:     emit,
		open:     map[string]*bundle{},
	}
}

// add appends m to the open bundle of its key, closing that bundle first
// if m would overflow it. A message too big for any bundle goes alone.
// It reports false (and takes nothing) once the batcher is stopped.
func (b *batcher) add(m outMsg) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return false
	}
	key := m.key
	grow := len(m.entry)
	cur := b.open[key]
	if cur != nil && (len(cur.msgs)+1 > b.maxMsgs || cur.wire+grow > b.maxBytes) {
		b.closeLocked(cur)
		cur = nil
	}
	if cur == nil {
		cur = &bundle{key: key, wire: b.baseWire}
		cur.holds.Store(1) // its completion's
		b.open[key] = cur
		cur.timer = time.AfterFunc(b.linger, func() { b.expire(cur) })
	}
	// One call's entries lie in one chunk and calls are serialized, so a
	// chunk already held is the last one.
	if n := len(cur.chunks); m.chunk != nil && (n == 0 || cur.chunks[n-1] != m.chunk) {
		m.chunk.refs.Add(1)
		cur.chunks = append(cur.chunks, m.chunk)
	}
	cur.msgs = append(cur.msgs, m.entry)
	cur.wire += grow
	cur.flow += int64(grow)
	cur.bytes += m.size
	if len(cur.msgs) >= b.maxMsgs || cur.wire >= b.maxBytes {
		b.closeLocked(cur)
	}
	return true
}

// expire closes bu when its linger time is up, unless it was closed.
func (b *batcher) expire(bu *bundle) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped && b.open[bu.key] == bu {
		b.closeLocked(bu)
	}
}

// flush closes every open bundle now.
func (b *batcher) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bu := range b.open {
		b.closeLocked(bu)
	}
}

// stop closes nothing more and returns the bundles still open.
func (b *batcher) stop() []*bundle {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	var left []*bundle
	for k, bu := range b.open {
		bu.timer.Stop()
		delete(b.open, k)
		left = append(left, bu)
	}
	return left
}

func (b *batcher) closeLocked(bu *bundle) {
	bu.timer.Stop()
	delete(b.open, bu.key)
	b.emit(bu)
}
