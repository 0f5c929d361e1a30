package publisher

import (
	"sync"
	"sync/atomic"
)

// chunk is the buffer one Publish call encodes its rows into. It goes
// back to its pool, to encode a later call's rows, once nothing can read
// it: the call is done with it and every bundle holding some of its
// entries is complete and freed by gRPC (bundle.drop). A fresh buffer of
// a batch's size is zeroed by the runtime, faulted in by the kernel and
// collected again, per batch, which cost about as much as the one copy of
// the payloads into it.
type chunk struct {
	buf  []byte
	refs atomic.Int32 // the encoding call's, plus one per bundle holding entries of it
	pool *chunkPool   // nil: not pooled (left to the collector)
}

// release drops a reference; the last returns the chunk to its pool.
func (c *chunk) release() {
	if c != nil && c.refs.Add(-1) == 0 && c.pool != nil {
		c.pool.put(c)
	}
}

// maxFreeChunks bounds the chunks a pool keeps between calls: one being
// filled while the previous one or two are still being sent is the
// steady state of a writer publishing batch after batch.
const maxFreeChunks = 3

// chunkPool keeps a publisher's free chunks.
type chunkPool struct {
	mu   sync.Mutex
	free []*chunk
}

// get returns a chunk with room for n bytes and one reference, reused
// when a free one is big enough. A nil pool makes an unpooled chunk.
func (cp *chunkPool) get(n int) *chunk {
	if cp != nil {
		cp.mu.Lock()
		for i, c := range cp.free {
			if cap(c.buf) >= n {
				last := len(cp.free) - 1
				cp.free[i], cp.free[last] = cp.free[last], nil
				cp.free = cp.free[:last]
				cp.mu.Unlock()
				c.buf = c.buf[:0]
				c.refs.Store(1)
				return c
			}
		}
		cp.mu.Unlock()
		n += n / 8 // headroom, so the next batch, a little bigger, fits too
	}
	c := &chunk{buf: make([]byte, 0, n), pool: cp}
	c.refs.Store(1)
	return c
}

// put keeps c for reuse, in place of the smallest free chunk when the
// pool is full.
func (cp *chunkPool) put(c *chunk) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if len(cp.free) < maxFreeChunks {
		cp.free = append(cp.free, c)
		return
	}
	small := 0
	for i, f := range cp.free {
		if cap(f.buf) < cap(cp.free[small].buf) {
			small = i
		}
	}
	if cap(c.buf) > cap(cp.free[small].buf) {
		cp.free[small] = c
	}
}
