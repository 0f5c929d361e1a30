package decode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Probes: what lets wasmtime stop a guest at its time limit without a
// check in its loops (engine_wasmtime_fence.h does the stopping). When a
// call passes its deadline, the host makes the guest's linear memory
// inaccessible; the guest's next access to it faults, and wasmtime turns
// that fault into a trap as it does for any access out of bounds. That
// stops every loop that reads or writes memory on each iteration. addProbes
// makes sure every loop does: a loop whose body does not access memory on
// every way round (before any branch back to its start) gets a probe at
// its top, a read of the first word of memory that changes nothing. Most
// loops of a decoder read their input or write their output each time
// round, so they carry no probe and run as compiled.
//
// The host must never touch the inaccessible memory itself, and only guest
// code may fault on it: so a probe also goes before each instruction that
// makes the host read or write memory for the guest (a call that can reach
// an imported function: calls to imports, indirect calls; memory.grow,
// memory.copy, memory.fill, memory.init), and the host never reads the
// memory of a call that was stopped.
//
// Nothing is renumbered: only function bodies change (by instructions
// added, never removed), so every index and every other section stays as
// it was, except DWARF, which refers to code offsets and is dropped.

// probe is i32.const 0; i32.load align=2 offset=0; drop.
var probe = []byte{0x41, 0x00, 0x28, 0x02, 0x00, 0x1a}

// errNoProbes wraps why a module cannot be probed; such a module runs with
// epoch interruption instead.
var errNoProbes = errors.New("module cannot be probed")

// addProbes returns wasm with probes added (see above).
func addProbes(wasm []byte) ([]byte, error) {
	out, err := probeModule(wasm)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoProbes, err)
	}
	return out, nil
}

func probeModule(wasm []byte) ([]byte, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" || binary.LittleEndian.Uint32(wasm[4:]) != 1 {
		return nil, errors.New("not a core wasm module")
	}
	var secs []section
	r := reader{b: wasm[8:]}
	for !r.done() {
		id := r.byte()
		body := r.bytes(int(r.u32()))
		if r.err != nil {
			return nil, r.err
		}
		secs = append(secs, section{id, body})
	}
	var funcImports uint32
	hasMemory := false
	for _, s := range secs {
		switch s.id {
		case 2:
			f, _, err := countImports(s.body)
			if err != nil {
				return nil, fmt.Errorf("imports: %v", err)
			}
			funcImports = f
			if importsMemory(s.body) {
				return nil, errors.New("an imported memory") // the host offers none
			}
		case 5:
			sr := reader{b: s.body}
			if sr.u32() > 0 {
				flag := sr.byte()
				// The probe reads address 0: memory 0 must start with a page.
				if min := sr.u32(); sr.err == nil && min > 0 && flag&4 == 0 { // not memory64
					hasMemory = true
				}
			}
		}
	}
	if !hasMemory {
		return nil, errors.New("no 32-bit memory of at least one page")
	}
	out := append([]byte(nil), wasm[:8]...)
	for _, s := range secs {
		body := s.body
		switch s.id {
		case 0:
			if name, _ := customName(s.body); strings.HasPrefix(name, ".debug") {
				continue
			}
		case 10:
			var err error
			if body, err = probeCode(s.body, funcImports); err != nil {
				return nil, fmt.Errorf("code: %v", err)
			}
		}
		out = append(out, s.id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

func importsMemory(b []byte) bool {
	r := reader{b: b}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.bytes(int(r.u32()))
		r.bytes(int(r.u32()))
		switch r.byte() {
		case 0:
			r.u32()
		case 1:
			r.byte()
			r.limits()
		case 2:
			return true
		case 3:
			r.byte()
			r.byte()
		}
	}
	return false
}

func probeCode(b []byte, funcImports uint32) ([]byte, error) {
	r := reader{b: b}
	n := r.u32()
	out := appendU32(nil, n)
	for i := uint32(0); i < n; i++ {
		body := r.bytes(int(r.u32()))
		if r.err != nil {
			return nil, r.err
		}
		nb, err := probeBody(body, funcImports)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		out = appendU32(out, uint32(len(nb)))
		out = append(out, nb...)
	}
	if !r.done() {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

// instr is one decoded instruction of a function body.
type instr struct {
	start, end int      // its bytes
	op         byte     // opcode (prefix byte for 0xfc, 0xfd)
	labels     []uint32 // br, br_if, br_table: the label depths
	access     bool     // reads or writes memory 0 itself
	host       bool     // may make the host touch memory: needs a probe before it
}

func probeBody(body []byte, funcImports uint32) ([]byte, error) {
	r := reader{b: body}
	groups := r.u32()
	for k := uint32(0); k < groups; k++ {
		r.u32()
		r.byte()
	}
	if r.err != nil {
		return nil, r.err
	}
	head := r.i
	var code []instr
	for !r.done() {
		in, err := decodeInstr(&r, funcImports)
		if err != nil {
			return nil, err
		}
		code = append(code, in)
	}
	if r.err != nil {
		return nil, r.err
	}
	out := make([]byte, 0, len(body)+len(body)/8+8)
	out = append(out, body[:head]...)
	for j, in := range code {
		if in.host {
			out = append(out, probe...)
		}
		out = append(out, body[in.start:in.end]...)
		if in.op == 0x03 && !accessesEveryTime(code[j+1:]) {
			out = append(out, probe...)
		}
	}
	return out, nil
}

// accessesEveryTime tells whether the body of a loop (the instructions
// after its loop opcode) accesses memory 0 at its own level before
// anything can branch back to the loop's start: then every iteration
// accesses memory. Anything else unsure (the loop's end reached, a way
// out that makes the rest unreachable) answers false: a probe too many
// costs little.
func accessesEveryTime(code []instr) bool {
	depth := uint32(0) // blocks opened inside the loop
	for _, in := range code {
		switch in.op {
		case 0x02, 0x03, 0x04: // block, loop, if
			depth++
		case 0x0b: // end
			if depth == 0 {
				return false
			}
			depth--
		case 0x0c, 0x0d, 0x0e: // br, br_if, br_table
			for _, l := range in.labels {
				if l == depth {
					return false // back to the loop's start
				}
			}
			if in.op != 0x0d && depth == 0 {
				return false
			}
		case 0x00, 0x0f, 0x12, 0x13: // unreachable, return, return_call*
			if depth == 0 {
				return false
			}
		}
		if in.access && depth == 0 {
			return true
		}
	}
	return false
}

func decodeInstr(r *reader, funcImports uint32) (instr, error) {
	in := instr{start: r.i}
	op := r.byte()
	in.op = op
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04:
		r.blockType()
	case op == 0x0c || op == 0x0d:
		in.labels = []uint32{r.u32()}
	case op == 0x0e:
		n := r.u32()
		for j := uint32(0); j <= n && r.err == nil; j++ {
			in.labels = append(in.labels, r.u32())
		}
	case op == 0x10 || op == 0x12: // call, return_call
		in.host = r.u32() < funcImports
	case op == 0xd2: // ref.func
		r.u32()
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect: may reach an import
		r.u32()
		r.u32()
		in.host = true
	case op == 0x1c:
		n := r.u32()
		for j := uint32(0); j < n && r.err == nil; j++ {
			r.byte()
		}
	case op >= 0x20 && op <= 0x26:
		r.u32()
	case op >= 0x28 && op <= 0x3e:
		in.access = memarg0(r)
	case op == 0x3f:
		r.u32()
	case op == 0x40: // memory.grow: the host maps pages
		r.u32()
		in.host = true
	case op == 0x41 || op == 0x42:
		r.sleb()
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op == 0xd0:
		r.byte()
	case op == 0xfc:
		sub := (&reader{b: r.b, i: r.i}).u32()
		in.host = sub == 8 || sub == 10 || sub == 11 // memory.init, memory.copy, memory.fill
		if err := r.prefixFC(); err != nil {
			return in, err
		}
	case op == 0xfd:
		sub := (&reader{b: r.b, i: r.i}).u32()
		if sub <= 11 || sub == 92 || sub == 93 || (sub >= 84 && sub <= 91) { // v128 loads, stores
			pr := reader{b: r.b, i: r.i}
			pr.u32()
			in.access = memarg0(&pr)
		}
		if err := r.prefixFD(); err != nil {
			return in, err
		}
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b ||
		(op >= 0x45 && op <= 0xc4) || op == 0xd1:
	default:
		return in, fmt.Errorf("opcode 0x%02x at %d", op, in.start)
	}
	in.end = r.i
	return in, r.err
}

// memarg0 reads a memarg and tells whether it addresses memory 0.
func memarg0(r *reader) bool {
	align := r.u32()
	mem := uint32(0)
	if align&0x40 != 0 {
		mem = r.u32()
	}
	r.u32()
	return mem == 0
}
