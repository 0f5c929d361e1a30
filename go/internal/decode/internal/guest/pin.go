package guest

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/abi"
)

// A batch decoded by wasmtime is handed out where the module wrote it:
// its buffers are slices of the instance's linear memory, which wasmtime
// maps outside the Go heap and which neither moves nor changes while the
// module does not run. Copying them out instead is a pass over the whole
// output, a seventh of the host's work on a large batch
// (bench/results/decode_results.md). The instance is pinned while any of
// the batch's buffers lives: out of the pool, so the module cannot run
// and overwrite (or, if hostile, rewrite after it was checked) what a
// consumer reads; back in the pool, or closed, when the last buffer is
// released. wazero's memory is a Go slice, which must not cross the C
// Data Interface: its batches are copied.

// MaxPinned bounds a decoder's pinned instances. mapInArrow holds the
// batch it yielded last while the next one decodes (its loop variable),
// so 2 let Spark's batches alternate between two instances without a
// copy; a caller keeping more batches alive gets copies, and the
// decoder's instances stay bounded by MaxInstances + MaxPinned.
const MaxPinned = 2

// pin is an instance's memory as the parent buffer of a batch's buffers.
// It is the memory.Allocator of that parent, whose Free (at the last
// release of any of the batch's buffers, on whatever thread releases it)
// runs onFree once.
type pin struct {
	parent *memory.Buffer
	mu     sync.Mutex
	onFree func()
}

func (p *pin) Allocate(int) []byte { panic("decode: a pinned instance's memory allocates nothing") }
func (p *pin) Reallocate(int, []byte) []byte {
	panic("decode: a pinned instance's memory allocates nothing")
}
func (p *pin) Free([]byte) {
	p.mu.Lock()
	f := p.onFree
	p.onFree = nil
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

// tryPin takes one of the decoder's MaxPinned pins for in, if in's memory
// may be handed out (wasmtime) and a pin is free: the pin's parent is in's
// memory as it is now, and onFree gives the pin back. nil: copy the batch.
func (p *Pool) tryPin(in *instance) *pin {
	if !in.external {
		return nil
	}
	view := abi.ViewOf(in.mem).(abi.View)
	if !abi.Aligned(view) {
		return nil
	}
	select {
	case p.pins <- struct{}{}:
	default:
		return nil
	}
	pn := &pin{onFree: func() { <-p.pins }}
	pn.parent = memory.NewBufferWithAllocator(view, pn)
	return pn
}

// keep makes pn hold in until the batch is released: in leaves the pool
// (giving up its slot, so that a caller holding batches never waits for
// one) and returns to it when the batch's last buffer is released, or is
// closed then if the pool has filled up or the decoder has been closed.
// The caller then releases pn.parent.
func (p *Pool) keep(pn *pin, in *instance) {
	<-p.slots
	pn.mu.Lock()
	pn.onFree = func() {
		<-p.pins
		select {
		case p.slots <- struct{}{}:
			p.put(in)
		default:
			in.close()
		}
	}
	pn.mu.Unlock()
}
