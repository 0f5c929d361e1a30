// Package cmem is the allocator of the C memory behind every exported
// Arrow buffer (cgo rules: memory a C consumer keeps must not be Go heap).
//
// Small buffers come from C malloc (arrow-go's mallocator). Large ones
// (LargeMin and up: a lot's payload, ack-id and decoded-column buffers) are
// mappings of their own, rounded up to a size class and kept for reuse a
// short while after they are freed. Why not malloc for those too: glibc
// raises its mmap threshold to the size of any mapped block it frees (up to
// 32 MiB), after which blocks of a few MiB come from its arenas, one per
// thread that allocates — and Go allocates on whatever thread a goroutine
// runs. A freed block then stays in its arena, so a worker's resident memory
// grows with the number of arenas and with fragmentation rather than with
// what it holds: at 10 KB-1 MB payloads a Spark worker peaked at 476-861 MiB
// with malloc and 326-450 MiB with this allocator, the same library otherwise
// (bench/tools/spark_memory.py, 2 runs per size). Mapping large buffers ourselves
// keeps resident memory at what is live plus the cache; the cache keeps a
// steady stream of similar lots from mapping and faulting in fresh pages
// for every batch.
package cmem

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
)

const (
	// LargeMin is the smallest buffer given a mapping of its own: glibc's
	// initial mmap threshold, so below it nothing changes.
	LargeMin = 128 << 10
	// classesPerDoubling sets the size classes of large buffers: four per
	// power of two, so rounding up wastes at most a quarter. A lot's buffers
	// are sized like the previous lot's plus an eighth (rawbatch.reserve),
	// so a steady stream reuses one class.
	classesPerDoubling = 4
	// DefaultMaxCached bounds the freed mappings kept for reuse when little
	// was live of late. A Spark task frees a lot's buffers as the JVM
	// consumes it while the streams build the next ones, so a few 8 MiB
	// lots (the largest lot) in flight are what is worth keeping. Beyond it
	// the cache keeps what was mapped for live buffers at the recent peak
	// (Allocator.limit).
	DefaultMaxCached = 32 << 20
	// DefaultMaxIdle is how long a freed mapping is kept unused before it is
	// returned to the system, so an idle worker does not hold the cache.
	DefaultMaxIdle = 5 * time.Second
)

// Allocator implements arrow-go's memory.Allocator. Safe for concurrent use.
type Allocator struct {
	small     *mallocator.Mallocator
	maxCached int64
	maxIdle   time.Duration
	now       func() time.Time // tests move the clock

	large  atomic.Int64 // bytes of live large buffers, as asked for
	mapped atomic.Int64 // bytes of live large buffers' mappings (class sizes)
	mu     sync.Mutex
	cache  map[int][]cached // by class size, newest last
	cached int64
	peak   [2]int64  // the most mapped bytes live in this window and the one before
	window time.Time // when this window (maxIdle long) began
}

type cached struct {
	mem   []byte // the whole mapping
	freed time.Time
}

// New returns an allocator that keeps up to maxCached bytes of freed large
// buffers for up to maxIdle.
func New(maxCached int64, maxIdle time.Duration) *Allocator {
	return &Allocator{small: mallocator.NewMallocator(), maxCached: maxCached, maxIdle: maxIdle,
		now: time.Now, cache: map[int][]cached{}}
}

// NewDefault is New(DefaultMaxCached, DefaultMaxIdle).
func NewDefault() *Allocator { return New(DefaultMaxCached, DefaultMaxIdle) }

// classSize rounds n (>= LargeMin) up to its size class, a multiple of the
// page size.
func classSize(n int) int {
	p := LargeMin
	for p*2 <= n {
		p *= 2
	}
	step := p / classesPerDoubling
	return (n + step - 1) / step * step
}

// Allocate returns size zeroed bytes.
func (a *Allocator) Allocate(size int) []byte {
	b, reused := a.allocate(size)
	if reused {
		clear(b)
	}
	return b
}

// AllocateUninitialized is Allocate for a caller that overwrites every byte
// it reads back (rawbatch's payload column): a reused mapping keeps what its
// last user wrote. Zeroing it would be one more pass over every payload byte
// received, only to be overwritten. Free takes the result as usual.
func (a *Allocator) AllocateUninitialized(size int) []byte {
	b, _ := a.allocate(size)
	return b
}

// Uninitialized is mem.AllocateUninitialized(size) when mem has it (an
// Allocator), else mem.Allocate(size): for callers that get any
// memory.Allocator and overwrite every byte they expose.
func Uninitialized(mem memory.Allocator, size int) []byte {
	if u, ok := mem.(interface{ AllocateUninitialized(int) []byte }); ok {
		return u.AllocateUninitialized(size)
	}
	return mem.Allocate(size)
}

// allocate returns size bytes, zero unless reused says they are a reused
// mapping's.
func (a *Allocator) allocate(size int) (b []byte, reused bool) {
	if size < LargeMin {
		return a.small.Allocate(size), false
	}
	class := classSize(size)
	a.large.Add(int64(size))
	a.mapped.Add(int64(class))
	if m := a.reuse(class); m != nil {
		return m[:size:class], true
	}
	return mapAnon(class)[:size:class], false // fresh pages are zero
}

// Reallocate resizes b, in place when its mapping has room.
func (a *Allocator) Reallocate(size int, b []byte) []byte {
	large := cap(b) >= LargeMin
	if large && size <= cap(b) {
		a.large.Add(int64(size - len(b)))
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	if !large && size < LargeMin {
		return a.small.Reallocate(size, b) // its result stays under LargeMin
	}
	n := a.Allocate(size)
	copy(n, b)
	a.Free(b)
	return n
}

// Free returns b; a large buffer goes to the cache while it has room.
func (a *Allocator) Free(b []byte) {
	if cap(b) < LargeMin {
		a.small.Free(b)
		return
	}
	a.large.Add(-int64(len(b)))
	m := b[:cap(b)]
	a.mapped.Add(-int64(len(m)))
	now := a.now()
	a.mu.Lock()
	drop := a.expire(now)
	a.notePeak(now)
	if a.cached+int64(len(m)) <= a.limit() {
		a.cache[len(m)] = append(a.cache[len(m)], cached{mem: m, freed: now})
		a.cached += int64(len(m))
	} else {
		drop = append(drop, m)
	}
	a.mu.Unlock()
	for _, d := range drop {
		unmap(d)
	}
}

// reuse takes a cached mapping of exactly class bytes, if any.
func (a *Allocator) reuse(class int) []byte {
	a.mu.Lock()
	now := a.now()
	drop := a.expire(now)
	a.notePeak(now)
	var m []byte
	if l := a.cache[class]; len(l) > 0 {
		m = l[len(l)-1].mem
		a.cache[class] = l[:len(l)-1]
		a.cached -= int64(class)
	}
	a.mu.Unlock()
	for _, d := range drop {
		unmap(d)
	}
	return m
}

// limit is how many bytes the cache may hold now: maxCached, or, when more
// was mapped for live buffers at once in the last one to two maxIdle
// windows, that peak less what is mapped for live buffers now.
//
// Frees come in bursts: in a Spark read at 1 KiB payloads (default
// options) a worker's live large buffers swung between 13 and 65 MiB every
// second or two, so a fixed 32 MiB dropped about one free in six, and as
// many lots later faulted in fresh huge pages for the kernel to zero
// (bench/tools/spark_cpu.py --mappings counts the mappings and huge page faults).
// Live plus cached stays within what the process had mapped at its recent
// peak, so the cache does not raise peak memory. The caller holds mu and
// has noted the peak.
func (a *Allocator) limit() int64 {
	return max(a.maxCached, max(a.peak[0], a.peak[1])-a.mapped.Load())
}

// notePeak records what is live now in this window's peak, starting a new
// window when maxIdle has passed. The caller holds mu.
func (a *Allocator) notePeak(now time.Time) {
	live := a.mapped.Load()
	if d := now.Sub(a.window); d >= a.maxIdle {
		prev := a.peak[0]
		if d >= 2*a.maxIdle {
			prev = live // nothing was noted in the window before
		}
		a.peak, a.window = [2]int64{live, prev}, now
	}
	a.peak[0] = max(a.peak[0], live)
}

// expire removes the mappings idle longer than maxIdle and returns them for
// unmapping outside the lock; the caller holds mu.
func (a *Allocator) expire(now time.Time) [][]byte {
	var drop [][]byte
	for class, l := range a.cache {
		keep := l[:0]
		for _, c := range l {
			if now.Sub(c.freed) > a.maxIdle {
				drop = append(drop, c.mem)
				a.cached -= int64(class)
			} else {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			delete(a.cache, class)
		} else {
			a.cache[class] = keep
		}
	}
	return drop
}

// AllocatedBytes is what live buffers asked for, small and large.
func (a *Allocator) AllocatedBytes() int64 { return a.small.AllocatedBytes() + a.large.Load() }

// CachedBytes is what freed large buffers kept for reuse occupy.
func (a *Allocator) CachedBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cached
}

// pointer is the address of b's first byte (for tests).
func pointer(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
