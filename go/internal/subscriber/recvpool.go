package subscriber

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// recvPool is gRPC's default buffer pool (the same tiers) without the
// zeroing. gRPC clears every buffer its default pool hands out
// (clear(b[:cap(b)]) in Get), in case a caller reads bytes it did not
// write; its HTTP/2 reader fills each data-frame buffer whole
// (io.ReadFull) and its codecs marshal into a buffer from its start. The
// clearing was ~1.8% of a Spark task process's CPU at 1 KiB payloads
// (bench/tools/spark_cpu.py pubsub-go-defaults --perf): a memset of every
// received byte before the copy that overwrites it. gRPC keeps a "dirty"
// pool like this one internally, not exported.
type recvPool struct {
	tiers [len(recvPoolExps)]sync.Pool
}

// recvPoolExps are the tiers' capacities as powers of two: gRPC's default
// tiers (mem.DefaultBufferPool): 256 B, a page, an HTTP/2 frame (16 KiB),
// io.Copy's 32 KiB, 1 MiB.
var recvPoolExps = [...]uint8{8, 12, 14, 15, 20}

var _ mem.BufferPool = (*recvPool)(nil)

// sharedRecvPool serves every subscriber's connections, as gRPC's default
// pool does.
var sharedRecvPool = &recvPool{}

// tier is the smallest tier that holds n bytes, or -1 when n is larger
// than the largest.
func (p *recvPool) tier(n int) int {
	if n <= 1 {
		return 0
	}
	exp := uint8(bits.Len(uint(n - 1))) // ceil(log2 n)
	for i, e := range recvPoolExps {
		if exp <= e {
			return i
		}
	}
	return -1
}

// Get returns a buffer of length n whose contents are unspecified.
func (p *recvPool) Get(n int) *[]byte {
	i := p.tier(n)
	if i < 0 {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[i].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<recvPoolExps[i])
	return &b
}

// Put keeps b for reuse if its capacity is exactly a tier's; other
// buffers (too large, or not from Get) are left to the garbage collector.
func (p *recvPool) Put(b *[]byte) {
	c := cap(*b)
	if i := p.tier(c); i >= 0 && c == 1<<recvPoolExps[i] {
		p.tiers[i].Put(b)
	}
}
