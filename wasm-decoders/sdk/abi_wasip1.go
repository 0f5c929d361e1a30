//go:build wasip1

package sdk

// The exports of decoder ABI version 1. The host calls _initialize (Go's
// reactor entry, which runs package init functions) once, then pg_init,
// then pg_decode per batch. Addresses are 32-bit offsets into "memory".

var (
	mod     *Module
	pinned  = map[uint32][]byte{} // live pg_alloc blocks, kept reachable for the GC
	output  []byte
	lastErr []byte
)

// ptrOf is the linear-memory address of b[0]; on wasm a pointer is 32 bits.
func ptrOf(b []byte) uint32 { return uint32(uintptr(unsafePointer(b))) }

// pack returns ptr<<32 | len, the ABI's (ptr, len) pair.
func pack(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(ptrOf(b))<<32 | uint64(len(b))
}

// block returns the n bytes at p, which must lie inside a pg_alloc block
// that starts at p.
func block(p, n uint32) ([]byte, bool) {
	b, ok := pinned[p]
	if !ok || n > uint32(len(b)) {
		return nil, false
	}
	return b[:n], true
}

func fail(err error) int32 {
	lastErr = []byte(err.Error())
	return 1
}

//go:wasmexport pg_abi_version
func pgABIVersion() int32 { return ABIVersion }

//go:wasmexport pg_alloc
func pgAlloc(size uint32) uint32 {
	if size == 0 {
		size = 1
	}
	b := make([]byte, size)
	p := ptrOf(b)
	pinned[p] = b
	return p
}

//go:wasmexport pg_free
func pgFree(p uint32) { delete(pinned, p) }

//go:wasmexport pg_init
func pgInit(p, n uint32) int32 {
	cfg, ok := block(p, n)
	if !ok {
		return fail(errBadBlock)
	}
	m := NewModule(registered)
	if err := m.Init(cfg); err != nil {
		return fail(err)
	}
	mod = m
	return 0
}

//go:wasmexport pg_decode
func pgDecode(p, n uint32) int32 {
	in, ok := block(p, n)
	if !ok {
		return fail(errBadBlock)
	}
	if mod == nil {
		return fail(errNoInit)
	}
	out, err := mod.Decode(in)
	if err != nil {
		output = nil
		return fail(err)
	}
	output = out
	return 0
}

//go:wasmexport pg_output
func pgOutput() uint64 { return pack(output) }

//go:wasmexport pg_error
func pgError() uint64 { return pack(lastErr) }
