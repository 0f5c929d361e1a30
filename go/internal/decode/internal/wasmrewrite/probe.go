package wasmrewrite

import (
	"errors"
	"fmt"
	"strings"
)

// Probes: what lets wasmtime stop a guest at its time limit without
// comparing a deadline in its loops (the wasmtime engine's fence.h stops it).
// AddProbes gives the module one more memory, a single page that nothing
// but the probes touches (the fence page, exported as FenceExport), and
// puts a probe at the top of every loop: a read of the fence page's first
// word that changes nothing. At a call's deadline the host makes the fence
// page inaccessible; the guest's next probe faults inside that memory's
// reservation, which wasmtime turns into a trap as it does for any access
// out of bounds. Code without loops ends (wasm has no goto, and recursion
// ends in wasmtime's stack-overflow trap), so loops are the only place a
// probe is needed. The host never reads or writes the fence page, so a
// host function or a libcall (memory.copy, memory.fill) working on the
// guest's own memory when the fence goes up carries on unharmed, and the
// guest stops at its next loop.
//
// Nothing is renumbered: the new memory comes after the module's own, and
// only function bodies change (by instructions added), so every index and
// every other section stays as it was, except DWARF, which refers to code
// offsets and is dropped.

// ProbesVersion names what AddProbes writes, in the names of compiled
// modules kept on disk (the wasmtime engine's cache): bump it when that
// changes.
const ProbesVersion = 1

// FenceExport is the name under which a probed module exports its fence
// page (a name no decoder ABI export starts with).
const FenceExport = "pubsub_go_fence"

// ErrNoProbes wraps why a module cannot be probed; such a module runs with
// epoch interruption instead.
var ErrNoProbes = errors.New("module cannot be probed")

// AddProbes returns wasm with the fence page and probes added (see above).
func AddProbes(wasm []byte) ([]byte, error) {
	out, err := probeModule(wasm)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoProbes, err)
	}
	return out, nil
}

func probeModule(wasm []byte) ([]byte, error) {
	secs, err := readSections(wasm)
	if err != nil {
		return nil, err
	}
	memories := uint32(0) // the fence page's index: after every memory of the module
	for _, s := range secs {
		switch s.id {
		case 2:
			_, _, m, err := countImports(s.body)
			if err != nil {
				return nil, fmt.Errorf("imports: %v", err)
			}
			if m > 0 {
				return nil, errors.New("an imported memory") // the host offers none
			}
		case 5:
			sr := reader{b: s.body}
			memories = sr.u32()
			if sr.err != nil {
				return nil, sr.err
			}
		}
	}
	// i32.const 0; i32.load align=2 (memory index follows) memories offset=0; drop
	probe := AppendU32([]byte{0x41, 0x00, 0x28, 0x40 | 0x02}, memories)
	probe = append(probe, 0x00, 0x1a)
	page := []byte{0x01, 0x01, 0x01} // limits: min 1, max 1 page
	export := AppendU32(append(AppendName(nil, FenceExport), 0x02), memories)
	w := newSectionWriter(wasm[:8], []section{{5, append(AppendU32(nil, 1), page...)},
		{7, append(AppendU32(nil, 1), export...)}})
	for _, s := range secs {
		body := s.body
		var err error
		switch s.id {
		case 0:
			if name, _ := customName(s.body); strings.HasPrefix(name, ".debug") {
				continue
			}
		case 5:
			body, err = appendEntry(s.body, page)
		case 7:
			body, err = appendEntry(s.body, export)
		case 10:
			body, err = probeCode(s.body, probe)
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %v", s.id, err)
		}
		w.section(s.id, body)
	}
	return w.done(), nil
}

func probeCode(b []byte, probe []byte) ([]byte, error) {
	return rewriteBodies(b, func(_ uint32, body []byte) ([]byte, error) { return probeBody(body, probe) })
}

// probeBody copies a function body with a probe after each loop opcode
// (and its block type). Every instruction is decoded, immediates included,
// so no byte of an immediate is taken for a loop.
func probeBody(body []byte, probe []byte) ([]byte, error) {
	r := reader{b: body}
	groups := r.u32()
	for k := uint32(0); k < groups; k++ {
		r.u32()
		r.byte()
	}
	if r.err != nil {
		return nil, r.err
	}
	out := make([]byte, 0, len(body)+len(body)/8+8)
	out = append(out, body[:r.i]...)
	for !r.done() {
		start := r.i
		op := r.byte()
		if err := r.skipImmediates(op); err != nil {
			return nil, err
		}
		if r.err != nil {
			return nil, r.err
		}
		out = append(out, body[start:r.i]...)
		if op == 0x03 {
			out = append(out, probe...)
		}
	}
	return out, r.err
}
