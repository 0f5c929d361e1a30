// Package wasmrewrite rewrites a decoder module's WebAssembly binary
// before an engine compiles it, so that the engine can stop a runaway
// guest at its time limit cheaply: Instrument adds a loop counter that
// calls the host (the wazero engine), AddProbes a fence-page probe at the
// top of every loop (the wasmtime engine). Both parse every instruction of
// every function body with one reader, and refuse a module they cannot
// parse (the engine then falls back to its slower way of stopping it).
package wasmrewrite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The loop counter: the time limit in wazero, cheaply. wazero can stop a runaway module only with
// WithCloseOnContextDone, which compiles a call out of the guest at every
// function entry and loop iteration; on the built-in decoders' .wasm
// builds that makes them 4-7x slower (bench/results/decode_results.md). Instead,
// the host rewrites a module before compiling it, like a fuel counter: a
// counter of loop iterations counts down, and when it reaches zero (every
// TickEvery iterations) the guest calls the host function
// TickModule.TickName, which fails the call once its context is done
// (deadline or cancellation) and otherwise resets the counter.
//
// The counter lives in a new local of each function, so that a loop
// iteration adds a register decrement and a not-taken branch (wazero keeps
// a global in memory: a load and a store on every iteration, chained from
// one iteration to the next). A new mutable i32 global carries it across
// calls: a function loads it on entry and after each call, and stores it
// before each call and on every way out (return, a branch to the
// function's own label, its final end), so every iteration of every loop
// in every frame still counts.
// The host call also lets the Go scheduler stop the world for GC, which a
// guest spinning in machine code would otherwise block. Code without loops
// ends (wasm has no goto; recursion ends in a stack-overflow trap), so
// loops are the only place a check is needed.
//
// Adding an imported function shifts the index of every defined function,
// so calls, ref.func, exports, the start function and element segments
// are renumbered; the name section and DWARF (which refer to the old
// numbering and code offsets) are dropped. A module the rewriter cannot
// parse (opcodes beyond the MVP, the post-MVP proposals wazero enables by
// default and SIMD) falls back to WithCloseOnContextDone.

// The import the rewritten module calls, and how often.
const (
	TickModule = "pubsub_go"
	TickName   = "tick"
	TickEvery  = 1 << 16
)

var ErrNotRewritable = errors.New("module not rewritable")

// Instrument returns wasm with the loop counter added, or
// ErrNotRewritable (wrapped) when the module must use the fallback.
func Instrument(wasm []byte) ([]byte, error) {
	out, err := rewrite(wasm)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRewritable, err)
	}
	return out, nil
}

type section struct {
	id   byte
	body []byte
}

// rewriter holds what the sections need to know of each other.
type rewriter struct {
	funcImports uint32   // imported functions before ours: indices below stay
	counter     uint32   // global index of the counter
	tick        uint32   // function index of the tick import
	params      []uint32 // parameter count of each type
	funcTypes   []uint32 // type index of each defined function

	// Per function body, while expr rewrites it:
	local uint32 // index of the counter's local
	depth int    // enclosing blocks, loops and ifs (0: the body itself)
}

func (rw *rewriter) fn(i uint32) uint32 {
	if i >= rw.funcImports {
		return i + 1
	}
	return i
}

func rewrite(wasm []byte) ([]byte, error) {
	secs, err := readSections(wasm)
	if err != nil {
		return nil, err
	}
	var rw rewriter
	var types, importedGlobals, definedGlobals uint32
	for _, s := range secs {
		sr := reader{b: s.body}
		switch s.id {
		case 1:
			types = sr.u32()
			for i := uint32(0); i < types && sr.err == nil; i++ {
				if sr.byte() != 0x60 {
					return nil, errors.New("type section: not a function type")
				}
				np := sr.u32()
				for j := uint32(0); j < np && sr.err == nil; j++ {
					sr.byte()
				}
				rw.params = append(rw.params, np)
				nr := sr.u32()
				for j := uint32(0); j < nr && sr.err == nil; j++ {
					sr.byte()
				}
			}
		case 3:
			n := sr.u32()
			for i := uint32(0); i < n && sr.err == nil; i++ {
				rw.funcTypes = append(rw.funcTypes, sr.u32())
			}
		case 2:
			f, g, _, err := countImports(s.body)
			if err != nil {
				return nil, fmt.Errorf("imports: %v", err)
			}
			rw.funcImports, importedGlobals = f, g
		case 6:
			definedGlobals = sr.u32()
		}
		if sr.err != nil {
			return nil, sr.err
		}
	}
	rw.counter = importedGlobals + definedGlobals
	rw.tick = rw.funcImports
	tickType := []byte{0x60, 0, 1, 0x7f} // () -> i32
	tickImport := AppendName(AppendName(nil, TickModule), TickName)
	tickImport = AppendU32(append(tickImport, 0x00), types)
	counter := append([]byte{0x7f, 0x01, 0x41}, appendSleb(nil, TickEvery)...) // mut i32 = TickEvery
	counter = append(counter, 0x0b)

	w := newSectionWriter(wasm[:8], []section{{1, append(AppendU32(nil, 1), tickType...)},
		{2, append(AppendU32(nil, 1), tickImport...)}, {6, append(AppendU32(nil, 1), counter...)}})
	for _, s := range secs {
		var body []byte
		var err error
		switch s.id {
		case 0:
			name, _ := customName(s.body)
			if name == "name" || strings.HasPrefix(name, ".debug") {
				continue // they refer to the old function indices and code offsets
			}
			body = s.body
		case 1:
			body, err = appendEntry(s.body, tickType)
		case 2:
			body, err = appendEntry(s.body, tickImport)
		case 6:
			body, err = rw.globals(s.body, counter)
		case 7:
			body, err = rw.exports(s.body)
		case 8:
			sr := reader{b: s.body}
			body = AppendU32(nil, rw.fn(sr.u32()))
			err = sr.err
		case 9:
			body, err = rw.elements(s.body)
		case 10:
			body, err = rw.code(s.body)
		default:
			body = s.body
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %v", s.id, err)
		}
		w.section(s.id, body)
	}
	return w.done(), nil
}

// readSections splits a core module into its sections.
func readSections(wasm []byte) ([]section, error) {
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
	return secs, nil
}

// sectionWriter writes a module's sections back, each section a rewriter
// adds (a one-entry vector) where the required order puts it when the
// module has none of that kind; a custom section (0) stays where it was.
type sectionWriter struct {
	out   []byte
	adds  []section
	added map[byte]bool
}

func newSectionWriter(header []byte, adds []section) *sectionWriter {
	return &sectionWriter{out: append([]byte(nil), header...), adds: adds, added: map[byte]bool{}}
}

func (w *sectionWriter) emit(id byte, body []byte) {
	w.out = append(w.out, id)
	w.out = AppendU32(w.out, uint32(len(body)))
	w.out = append(w.out, body...)
}

func (w *sectionWriter) addBefore(id byte) {
	for _, a := range w.adds {
		if !w.added[a.id] && order(a.id) < order(id) {
			w.emit(a.id, a.body)
			w.added[a.id] = true
		}
	}
}

// section writes the module's section id (its body as rewritten).
func (w *sectionWriter) section(id byte, body []byte) {
	if id != 0 {
		w.addBefore(id)
	}
	w.added[id] = true
	w.emit(id, body)
}

func (w *sectionWriter) done() []byte {
	w.addBefore(255)
	return w.out
}

// order is a section's place in the order the binary format requires.
func order(id byte) int {
	switch id {
	case 12: // data count: after element(9), before code(10)
		return 95
	case 13: // tag: after memory(5), before global(6)
		return 55
	}
	return int(id) * 10
}

// appendEntry adds one entry to a vector section.
func appendEntry(b, entry []byte) ([]byte, error) {
	r := reader{b: b}
	n := r.u32()
	out := AppendU32(nil, n+1)
	out = append(out, b[r.i:]...)
	return append(out, entry...), r.err
}

func customName(b []byte) (string, error) {
	r := reader{b: b}
	n := r.u32()
	s := r.bytes(int(n))
	return string(s), r.err
}

func countImports(b []byte) (funcs, globals, memories uint32, err error) {
	r := reader{b: b}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.bytes(int(r.u32())) // module
		r.bytes(int(r.u32())) // name
		switch r.byte() {
		case 0: // func
			r.u32()
			funcs++
		case 1: // table: reftype, limits
			r.byte()
			r.limits()
		case 2: // memory
			r.limits()
			memories++
		case 3: // global: valtype, mut
			r.byte()
			r.byte()
			globals++
		default:
			return 0, 0, 0, errors.New("unknown import kind")
		}
	}
	return funcs, globals, memories, r.err
}

func (rw *rewriter) globals(b, counter []byte) ([]byte, error) {
	r := reader{b: b}
	n := r.u32()
	out := AppendU32(nil, n+1)
	for i := uint32(0); i < n && r.err == nil; i++ {
		out = append(out, r.bytes(2)...) // valtype, mut
		var err error
		if out, err = rw.expr(&r, out, false, true); err != nil {
			return nil, err
		}
	}
	if r.err != nil || !r.done() {
		return nil, errors.New("malformed globals")
	}
	return append(out, counter...), nil
}

func (rw *rewriter) exports(b []byte) ([]byte, error) {
	r := reader{b: b}
	n := r.u32()
	out := AppendU32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		out = AppendName(out, string(r.bytes(int(r.u32()))))
		kind := r.byte()
		idx := r.u32()
		if kind == 0 {
			idx = rw.fn(idx)
		}
		out = AppendU32(append(out, kind), idx)
	}
	if r.err != nil || !r.done() {
		return nil, errors.New("malformed exports")
	}
	return out, nil
}

func (rw *rewriter) elements(b []byte) ([]byte, error) {
	r := reader{b: b}
	n := r.u32()
	out := AppendU32(nil, n)
	var err error
	for i := uint32(0); i < n && r.err == nil && err == nil; i++ {
		flags := r.u32()
		out = AppendU32(out, flags)
		if flags > 7 {
			return nil, fmt.Errorf("element segment flags %d", flags)
		}
		if flags&2 != 0 && flags&1 == 0 { // explicit table index
			out = AppendU32(out, r.u32())
		}
		if flags&1 == 0 { // active: offset expression
			if out, err = rw.expr(&r, out, false, true); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 { // elemkind (flags&4 == 0) or reftype
			out = append(out, r.byte())
		}
		count := r.u32()
		out = AppendU32(out, count)
		for j := uint32(0); j < count && r.err == nil && err == nil; j++ {
			if flags&4 == 0 {
				out = AppendU32(out, rw.fn(r.u32()))
			} else {
				out, err = rw.expr(&r, out, false, true)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if r.err != nil || !r.done() {
		return nil, errors.New("malformed elements")
	}
	return out, nil
}

func (rw *rewriter) code(b []byte) ([]byte, error) {
	return rewriteBodies(b, func(i uint32, body []byte) ([]byte, error) {
		if int(i) >= len(rw.funcTypes) || int(rw.funcTypes[i]) >= len(rw.params) {
			return nil, errors.New("no type")
		}
		br := reader{b: body}
		groups := br.u32()
		groupsEnd := br.i
		locals := uint64(rw.params[rw.funcTypes[i]])
		for k := uint32(0); k < groups; k++ { // locals: count, valtype
			locals += uint64(br.u32())
			br.byte()
		}
		if br.err != nil {
			return nil, br.err
		}
		if locals >= 50000 { // wazero's limit on a function's locals
			return nil, errors.New("too many locals")
		}
		// One more group: the counter's i32 local, loaded from the global.
		rw.local, rw.depth = uint32(locals), 0
		nb := AppendU32(make([]byte, 0, len(body)+len(body)/4+16), groups+1)
		nb = append(nb, body[groupsEnd:br.i]...)
		nb = append(nb, 1, 0x7f)
		nb = rw.appendLoad(nb)
		return rw.expr(&br, nb, true, false)
	})
}

// rewriteBodies rewrites each function body of a code section with f.
func rewriteBodies(b []byte, f func(i uint32, body []byte) ([]byte, error)) ([]byte, error) {
	r := reader{b: b}
	n := r.u32()
	out := AppendU32(nil, n)
	for i := uint32(0); i < n; i++ {
		body := r.bytes(int(r.u32()))
		if r.err != nil {
			return nil, r.err
		}
		nb, err := f(i, body)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		out = AppendU32(out, uint32(len(nb)))
		out = append(out, nb...)
	}
	if !r.done() {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

// appendCheck is the code added at the top of every loop:
//
//	local.get $l; i32.const 1; i32.sub; local.tee $l
//	i32.eqz; if; call $tick; local.set $l; end
func (rw *rewriter) appendCheck(out []byte) []byte {
	out = AppendU32(append(out, 0x20), rw.local)
	out = append(out, 0x41, 0x01, 0x6b, 0x22)
	out = AppendU32(out, rw.local)
	out = append(out, 0x45, 0x04, 0x40, 0x10)
	out = AppendU32(out, rw.tick)
	out = AppendU32(append(out, 0x21), rw.local)
	return append(out, 0x0b)
}

// appendStore (local.get $l; global.set $c) hands the counter to a callee
// or caller; appendLoad (global.get $c; local.set $l) takes it back.
func (rw *rewriter) appendStore(out []byte) []byte {
	out = AppendU32(append(out, 0x20), rw.local)
	return AppendU32(append(out, 0x24), rw.counter)
}

func (rw *rewriter) appendLoad(out []byte) []byte {
	out = AppendU32(append(out, 0x23), rw.counter)
	return AppendU32(append(out, 0x21), rw.local)
}

// expr copies instructions from r to out, renumbering function indices;
// in a function body (body) it adds the check after each loop's block
// type and moves the counter between its local and the global around
// calls and exits. It decodes every immediate, so bytes inside immediates
// are never taken for opcodes. A constant expression (one) ends at its
// end; a function body at the end of r.
func (rw *rewriter) expr(r *reader, out []byte, body, one bool) ([]byte, error) {
	for !r.done() {
		start := r.i
		op := r.byte()
		loop := false
		fnIdx := false
		store, load := false, false // the counter: to the global before op, back after it
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			r.blockType()
			loop = body && op == 0x03
			rw.depth++
		case op == 0x0b: // end: of a block, or of the body itself
			if body {
				rw.depth--
				store = rw.depth < 0
			}
		case op == 0x0c || op == 0x0d: // br, br_if: to the body's label is a return
			label := r.u32()
			store = body && int(label) == rw.depth
		case op == 0x0e: // br_table
			n := r.u32()
			for j := uint32(0); j <= n && r.err == nil; j++ {
				label := r.u32()
				store = store || (body && int(label) == rw.depth)
			}
		case op == 0x0f: // return
			store = body
		case op == 0x10 || op == 0xd2: // call, ref.func
			fnIdx = true
			store, load = body && op == 0x10, body && op == 0x10
		case op == 0x12: // return_call
			fnIdx = true
			store = body
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
			store, load = body, body && op == 0x11
		default:
			if err := r.skipImmediates(op); err != nil {
				return nil, err
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		if store {
			out = rw.appendStore(out)
		}
		if fnIdx {
			out = AppendU32(append(out, op), rw.fn(r.u32()))
			if r.err != nil {
				return nil, r.err
			}
		} else {
			out = append(out, r.b[start:r.i]...)
		}
		if loop {
			out = rw.appendCheck(out)
		}
		if load {
			out = rw.appendLoad(out)
		}
		if body && rw.depth < 0 && !r.done() {
			return nil, errors.New("code after the function's end")
		}
		if one && op == 0x0b {
			return out, nil
		}
	}
	if one {
		return nil, errors.New("unterminated expression")
	}
	return out, r.err
}

// reader decodes the wasm binary format; the first error sticks.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) done() bool { return r.err != nil || r.i >= len(r.b) }

func (r *reader) fail(msg string) {
	if r.err == nil {
		r.err = errors.New(msg)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || r.i >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.i {
		r.fail("unexpected end")
		return nil
	}
	s := r.b[r.i : r.i+n]
	r.i += n
	return s
}

func (r *reader) u32() uint32 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if v > 0xffffffff {
				r.fail("u32 overflow")
			}
			return uint32(v)
		}
	}
	r.fail("u32 too long")
	return 0
}

func (r *reader) sleb() {
	for k := 0; k < 10; k++ {
		if r.byte()&0x80 == 0 {
			return
		}
	}
	r.fail("leb too long")
}

func (r *reader) blockType() {
	c := r.byte()
	switch {
	case c == 0x40 || (c >= 0x6f && c <= 0x7f): // empty or a value type
	default: // s33 type index: the byte just read is its first
		r.i--
		r.sleb()
	}
}

func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 { // multi-memory: memory index follows
		r.u32()
	}
	r.u32() // offset
}

func (r *reader) limits() {
	flag := r.byte()
	r.u32()
	if flag&1 != 0 {
		r.u32()
	}
}

func (r *reader) prefixFC() error {
	switch sub := r.u32(); {
	case sub <= 7: // saturating truncations
	case sub == 8: // memory.init data, mem
		r.u32()
		r.u32()
	case sub == 9 || sub == 13 || sub == 15 || sub == 16 || sub == 17: // data.drop, elem.drop, table.grow/size/fill
		r.u32()
	case sub == 10 || sub == 12 || sub == 14: // memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	case sub == 11: // memory.fill
		r.u32()
	default:
		return fmt.Errorf("opcode 0xfc %d", sub)
	}
	return nil
}

func (r *reader) prefixFD() error {
	switch sub := r.u32(); {
	case sub <= 11 || sub == 92 || sub == 93: // v128 loads/stores
		r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load/store lane
		r.memarg()
		r.byte()
	case sub <= 275: // no immediates
	default:
		return fmt.Errorf("opcode 0xfd %d", sub)
	}
	return nil
}

// skipImmediates reads the immediates of op (the MVP, the post-MVP
// proposals wazero enables by default, SIMD), or fails on anything else.
func (r *reader) skipImmediates(op byte) error {
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
		r.blockType()
	case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 || op == 0xd2 || // br, br_if, call, return_call, ref.func
		(op >= 0x20 && op <= 0x26) || op == 0x3f || op == 0x40: // local.*, global.*, table.get/set, memory.size/grow
		r.u32()
	case op == 0x0e: // br_table
		n := r.u32()
		for j := uint32(0); j <= n && r.err == nil; j++ {
			r.u32()
		}
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		n := r.u32()
		for j := uint32(0); j < n && r.err == nil; j++ {
			r.byte()
		}
	case op >= 0x28 && op <= 0x3e: // loads, stores
		r.memarg()
	case op == 0x41 || op == 0x42: // i32.const, i64.const
		r.sleb()
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op == 0xd0: // ref.null t
		r.byte()
	case op == 0xfc:
		return r.prefixFC()
	case op == 0xfd:
		return r.prefixFD()
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b ||
		(op >= 0x45 && op <= 0xc4) || op == 0xd1:
		// no immediates
	default:
		return fmt.Errorf("opcode 0x%02x at %d", op, r.i-1)
	}
	return nil
}

// AppendU32 appends v as an unsigned LEB128 (the wasm binary's u32).
func AppendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendName appends s as a wasm name (its length, then its bytes).
func AppendName(b []byte, s string) []byte {
	return append(AppendU32(b, uint32(len(s))), s...)
}
