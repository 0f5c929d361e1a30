package cmem

import (
	"bytes"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestClassSize(t *testing.T) {
	cases := []struct{ n, want int }{
		{LargeMin, LargeMin},
		{LargeMin + 1, LargeMin + LargeMin/4},
		{3 << 20, 3 << 20},
		{(8 << 20) + 1, (8 << 20) + (2 << 20)},
	}
	for _, c := range cases {
		if got := classSize(c.n); got != c.want {
			t.Errorf("classSize(%d) = %d, want %d", c.n, got, c.want)
		}
		if got := classSize(c.n); got%4096 != 0 || got < c.n || got > c.n+c.n/4+4096 {
			t.Errorf("classSize(%d) = %d: not a page multiple within a quarter", c.n, got)
		}
	}
}

func TestSmallBuffersAreMalloced(t *testing.T) {
	a := NewDefault()
	b := a.Allocate(1000)
	if len(b) != 1000 || cap(b) >= LargeMin {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	if a.AllocatedBytes() != 1000 {
		t.Fatalf("allocated %d", a.AllocatedBytes())
	}
	a.Free(b)
	if a.AllocatedBytes() != 0 || a.CachedBytes() != 0 {
		t.Fatalf("after free: allocated %d cached %d", a.AllocatedBytes(), a.CachedBytes())
	}
}

// A freed large buffer is handed out again for the same class, zeroed: a
// steady stream of lots does not map fresh pages per batch.
func TestLargeBuffersAreReusedZeroed(t *testing.T) {
	a := NewDefault()
	b := a.Allocate(5 << 20)
	for i := range b {
		b[i] = 0xAB
	}
	p := pointer(b)
	a.Free(b)
	if a.CachedBytes() != int64(classSize(5<<20)) || a.AllocatedBytes() != 0 {
		t.Fatalf("cached %d allocated %d", a.CachedBytes(), a.AllocatedBytes())
	}
	c := a.Allocate((5 << 20) - 100) // same class
	if pointer(c) != p {
		t.Fatal("the cached mapping was not reused")
	}
	if !bytes.Equal(c, make([]byte, len(c))) {
		t.Fatal("a reused buffer is not zeroed")
	}
	if a.CachedBytes() != 0 {
		t.Fatalf("cached %d after reuse", a.CachedBytes())
	}
	a.Free(c)
}

func TestAllocateUninitializedReusesWithoutZeroing(t *testing.T) {
	a := NewDefault()
	b := a.Allocate(5 << 20)
	b[0], b[len(b)-1] = 0xAB, 0xCD
	p := pointer(b)
	a.Free(b)
	c := a.AllocateUninitialized(5 << 20)
	if pointer(c) != p || len(c) != 5<<20 {
		t.Fatal("the cached mapping was not reused")
	}
	if c[0] != 0xAB || c[len(c)-1] != 0xCD {
		t.Fatal("the reused mapping was zeroed (or is not the one freed)")
	}
	if a.AllocatedBytes() != 5<<20 {
		t.Fatalf("allocated %d, want %d", a.AllocatedBytes(), 5<<20)
	}
	a.Free(c)
	if a.AllocatedBytes() != 0 {
		t.Fatalf("allocated %d after Free", a.AllocatedBytes())
	}
	if s := a.AllocateUninitialized(100); len(s) != 100 {
		t.Fatalf("small: len %d", len(s))
	} else {
		a.Free(s)
	}
}

// With little live at once, the cache holds at most maxCached: buffers of
// five classes, each freed before the next is allocated, fill it to the
// bound and no further.
func TestCacheIsBoundedAndExpires(t *testing.T) {
	a := New(3<<20, time.Second)
	clock := time.Unix(1000, 0)
	a.now = func() time.Time { return clock }
	for i := range 5 {
		a.Free(a.Allocate((1 << 20) + i*(256<<10))) // 1, 1.25, 1.5, 1.75, 2 MiB: one class each
	}
	if got := a.CachedBytes(); got > 3<<20 || got < 2<<20 {
		t.Fatalf("cached %d, want at most the bound %d and not less than it less a buffer", got, 3<<20)
	}
	clock = clock.Add(2 * time.Second)
	b := a.Allocate(200 << 10) // any call expires what idled too long
	if got := a.CachedBytes(); got != 0 {
		t.Fatalf("cached %d after the idle limit", got)
	}
	a.Free(b)
}

// Frees come in bursts larger than maxCached (a Spark task's lots); the
// cache keeps what was live at the recent peak, so allocating the same
// again maps nothing fresh, and live plus cached never exceeds that peak.
func TestCacheKeepsWhatWasLiveAtTheRecentPeak(t *testing.T) {
	a := New(8<<20, time.Second)
	clock := time.Unix(1000, 0)
	a.now = func() time.Time { return clock }
	const n, size = 12, 5 << 20
	seen := map[uintptr]bool{}
	var bufs [][]byte
	for range n {
		b := a.Allocate(size)
		seen[pointer(b)] = true
		bufs = append(bufs, b)
	}
	peak := a.AllocatedBytes()
	for _, b := range bufs {
		a.Free(b)
		if total := a.AllocatedBytes() + a.CachedBytes(); total > int64(n*classSize(size)) {
			t.Fatalf("live + cached %d is over the peak's %d", total, n*classSize(size))
		}
	}
	if got := a.CachedBytes(); got != int64(n*classSize(size)) {
		t.Fatalf("cached %d after a burst of %d frees, want all %d (peak live %d, bound %d)",
			got, n, n*classSize(size), peak, 8<<20)
	}
	bufs = bufs[:0]
	for range n {
		b := a.Allocate(size)
		if !seen[pointer(b)] {
			t.Fatal("a fresh mapping while the burst's mappings were cached")
		}
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		a.Free(b)
	}

	// Two idle windows later the peak is forgotten: the cached mappings
	// expire, and the bound applies again.
	clock = clock.Add(3 * time.Second)
	for i := range 5 {
		a.Free(a.Allocate((1 << 20) + i*(256<<10)))
	}
	if got := a.CachedBytes(); got > 8<<20 {
		t.Fatalf("cached %d, over the bound %d once the peak was old", got, 8<<20)
	}
	for i := range 4 {
		a.Free(a.Allocate((3 << 20) + i*(1<<20))) // 3, 4, 5, 6 MiB
	}
	if got := a.CachedBytes(); got > 8<<20 {
		t.Fatalf("cached %d, over the bound %d once the peak was old", got, 8<<20)
	}
}

func TestReallocate(t *testing.T) {
	a := NewDefault()
	// small -> large: copied into a mapping.
	b := a.Allocate(100)
	copy(b, "hello")
	b = a.Reallocate(300<<10, b)
	if cap(b) < LargeMin || string(b[:5]) != "hello" || !bytes.Equal(b[5:], make([]byte, len(b)-5)) {
		t.Fatal("small to large lost data or is not zeroed")
	}
	// large, within its class: in place, the new part zeroed.
	p := pointer(b)
	b[len(b)-1] = 7
	b = a.Reallocate(len(b)-10, b)
	b = a.Reallocate(cap(b), b)
	if pointer(b) != p || string(b[:5]) != "hello" || !bytes.Equal(b[300<<10-10:], make([]byte, len(b)-(300<<10-10))) {
		t.Fatal("growing within the class moved or did not zero")
	}
	// large -> a larger class: copied.
	b = a.Reallocate(3<<20, b)
	if string(b[:5]) != "hello" || len(b) != 3<<20 {
		t.Fatal("growing to a larger class lost data")
	}
	if a.AllocatedBytes() != 3<<20 {
		t.Fatalf("allocated %d, want %d", a.AllocatedBytes(), 3<<20)
	}
	a.Free(b)
	if a.AllocatedBytes() != 0 {
		t.Fatalf("allocated %d after free", a.AllocatedBytes())
	}
}

// Arrow builders work on it unchanged, and every buffer comes back.
func TestArrowBuilderRoundTrip(t *testing.T) {
	a := NewDefault()
	checked := memory.NewCheckedAllocator(a)
	defer checked.AssertSize(t, 0)
	bb := array.NewBinaryBuilder(checked, arrow.BinaryTypes.Binary)
	payload := bytes.Repeat([]byte("x"), 1000)
	for range 5000 { // 5 MB of values: the data buffer grows through large classes
		bb.Append(payload)
	}
	arr := bb.NewBinaryArray()
	bb.Release()
	if arr.Len() != 5000 || !bytes.Equal(arr.Value(4999), payload) {
		t.Fatal("values lost")
	}
	arr.Release()
	if a.AllocatedBytes() != 0 {
		t.Fatalf("allocated %d after release", a.AllocatedBytes())
	}
}
