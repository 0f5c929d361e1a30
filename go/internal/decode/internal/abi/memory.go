package abi

import (
	"errors"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
)

// Memory is a module instance's linear memory.
type Memory = engine.Memory

// View is a guest memory taken as one slice between two calls (it
// neither grows nor moves while the guest is not running), so that reading
// a batch's many output buffers is not a call into the engine each.
type View []byte

func (v View) Size() uint32 { return uint32(len(v)) }

func (v View) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(v)) {
		return nil, false
	}
	return v[off : off+n : off+n], true
}

// Viewer is a Memory whose engine can hand out its bytes (wasmtime's,
// which lie outside the Go heap).
type Viewer interface{ View() []byte }

// ViewOf is mem as a View when its engine can hand out its bytes, else
// mem itself (wazero's Read is already a slice of its own).
func ViewOf(mem Memory) Memory {
	if m, ok := mem.(Viewer); ok {
		return View(m.View())
	}
	return mem
}

// GuestAlign is the alignment a module's buffer needs to be handed out as
// it lies: what Arrow's C++ readers assume of any value buffer (the
// 8-byte types). The C SDK aligns its buffers to 16; a buffer that is not
// aligned makes its batch a copy.
const GuestAlign = 8

// Aligned reports whether v's first byte is GuestAlign-aligned.
func Aligned(v View) bool {
	return len(v) > 0 && uintptr(unsafe.Pointer(&v[0]))%GuestAlign == 0
}

// reader reads the v2 framing (little-endian u32s and byte strings); the
// first error sticks.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) done() bool { return r.err != nil || r.i >= len(r.b) }

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.i {
		if r.err == nil {
			r.err = errors.New("unexpected end")
		}
		return nil
	}
	b := r.b[r.i : r.i+n]
	r.i += n
	return b
}

// CopyBuf copies b into a buffer from mem; nil stays nil (no validity
// bitmap: no nulls).
func CopyBuf(mem memory.Allocator, b []byte) *memory.Buffer {
	if b == nil {
		return nil
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(b))
	copy(buf.Bytes(), b)
	return buf
}

// FixedBytes is the size of n slots of the fixed-width type t.
func FixedBytes(t arrow.FixedWidthDataType, n int) int {
	if t.ID() == arrow.BOOL {
		return (n + 7) / 8
	}
	return n * t.BitWidth() / 8
}
