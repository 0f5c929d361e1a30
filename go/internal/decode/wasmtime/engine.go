//go:build cgo

// Package wasmtime is the wasmtime engine: wasmtime's C API, loaded at
// run time from the wasmtime Python package's shared library (see below).
// It registers itself only in a build with cgo; without, "wasmtime" is
// unavailable (nocgo.go) and "auto" runs modules in wazero.
package wasmtime

/*
#cgo LDFLAGS: -ldl
#include "shim.h"
*/
import "C"

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/abi"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/wasmrewrite"
)

// The wasmtime engine: wasmtime's C API, loaded at run time from the
// shared library inside the wasmtime Python package (WasmtimeLibrary), so
// that the library this package builds into links nothing but glibc.
// Modules are compiled once per process (Cranelift), found again by their
// SHA-256; each instance has its own store, whose limiter caps memory.
// One goroutine per process ticks every epochTick. The time limit is the
// memory fence (fence.h) for modules that wasmrewrite can
// probe: at a call's deadline, or when its caller cancels, the tick makes
// the module's fence page inaccessible, and the probe at the top of the
// guest's next loop traps. Other modules get epoch interruption: a store's
// deadline callback (C, no call into Go) stops the guest. The fence costs
// a loop iteration one load, epoch interruption a load, a compare and a
// branch with their inputs reloaded from the stack (RATIONALE.md).

// epochTick is the time limit's resolution; each tick costs an idle
// process one wake-up, a guest under epoch interruption one callback.
const epochTick = 10 * time.Millisecond

// The messages of the errors by which the deadline callback stops a call.
const (
	wtTimeLimit = "pubsub-go: decoder time limit"
	wtCanceled  = "pubsub-go: decode canceled"
)

// wtCompiled is a compiled module (wasmtime_module_t) and its engine.
type wtCompiled struct {
	module, engine *C.pgw_opaque
	mode           wtMode
}

// External: wasmtime maps an instance's memory outside the Go heap, so a
// batch's buffers may be handed out where the module wrote them.
func (m *wtCompiled) External() bool { return true }

func (m *wtCompiled) TimeLimit() string { return [...]string{"fence", "epoch", "none"}[m.mode] }

// wtMode is how a module's calls are stopped at their time limit.
type wtMode int8

const (
	wtFence   wtMode = iota // the memory fence; the module has probes (wasmrewrite.AddProbes)
	wtEpoch                 // epoch interruption: modules that cannot be probed
	wtNoLimit               // none (Tuning.NoTimeLimit: benchmarks)
)

type wtKey struct {
	sum    [sha256.Size]byte
	mode   wtMode
	probes bool // Tuning.Probes
}

var wasmtime = struct {
	sync.Mutex
	path    string           // the library loaded, "" before
	engines [2]*C.pgw_opaque // with epoch interruption, and without (fence, no limit)
	modules map[wtKey]*wtCompiled
}{modules: map[wtKey]*wtCompiled{}}

// loadWasmtime loads the library at path (once per process: a second,
// different path is an error), makes both engines and starts the ticker.
func loadWasmtime(path string) error {
	if path == "" {
		return errors.New("the wasmtime engine needs the path of wasmtime's C library " +
			"(_libwasmtime.so in the wasmtime Python package: pip install wasmtime)")
	}
	if wasmtime.path != "" {
		if path != wasmtime.path {
			return fmt.Errorf("wasmtime's library is already loaded from %s, not %s", wasmtime.path, path)
		}
		return nil
	}
	if err := checkWasmtimeVersion(path); err != nil {
		return err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.pgw_load(cpath); msg != nil {
		return fmt.Errorf("loading wasmtime's library %s: %s", path, C.GoString(msg))
	}
	C.pgw_set_messages(C.CString(wtTimeLimit), C.CString(wtCanceled)) // kept for the process
	e, f := C.pgw_engine_new(true), C.pgw_engine_new(false)
	if e == nil || f == nil {
		return fmt.Errorf("wasmtime's library %s: no engine", path)
	}
	wasmtime.engines, wasmtime.path = [2]*C.pgw_opaque{e, f}, path
	go func() {
		for range time.Tick(epochTick) {
			C.pgw_tick(e)
		}
	}()
	return nil
}

func btoiC(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wasmtimeMajor is the version of wasmtime's C API that
// shim.h declares: its structs' layouts (values, externs)
// change between major versions, so a library of another is refused.
const wasmtimeMajor = 50

// checkWasmtimeVersion reads the version of the wasmtime package that
// holds the library (site-packages/wasmtime/<platform>/_libwasmtime.so,
// beside site-packages/wasmtime-<version>.dist-info).
func checkWasmtimeVersion(lib string) error {
	site := filepath.Dir(filepath.Dir(filepath.Dir(lib)))
	infos, _ := filepath.Glob(filepath.Join(site, "wasmtime-*.dist-info"))
	want := fmt.Sprintf("pip install 'wasmtime==%d.*'", wasmtimeMajor)
	if len(infos) != 1 {
		return fmt.Errorf("%s is not in an installed wasmtime package (no single wasmtime-*.dist-info beside it): %s", lib, want)
	}
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(infos[0]), "wasmtime-"), ".dist-info")
	if major, _, _ := strings.Cut(version, "."); major != fmt.Sprint(wasmtimeMajor) {
		return fmt.Errorf("wasmtime %s at %s: the wasmtime engine drives wasmtime's C API of version %d (its structs change between versions): %s",
			version, lib, wasmtimeMajor, want)
	}
	return nil
}

// compiledWasmtime compiles wasm (or finds it compiled): with probes, for
// the memory fence, when wasmrewrite can probe it; else as it is, for epoch
// interruption. The memory cap is the store's, not the module's, so it is
// not part of the key.
func compiled(wasm []byte, lib string, opts engine.Tuning) (*wtCompiled, error) {
	wasmtime.Lock()
	defer wasmtime.Unlock()
	if err := loadWasmtime(lib); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoWasmtime, err)
	}
	if len(wasm) == 0 {
		return nil, fmt.Errorf("%w: invalid module: empty", engine.ErrDecoder)
	}
	key := wtKey{sum: sha256.Sum256(wasm), probes: opts.Probes}
	switch {
	case opts.NoTimeLimit:
		key.mode = wtNoLimit
	case opts.Epoch:
		key.mode = wtEpoch
	}
	if m, ok := wasmtime.modules[key]; ok {
		return m, nil
	}
	code := wasm
	if key.mode == wtFence || opts.Probes {
		probed, err := wasmrewrite.AddProbes(wasm)
		switch {
		case err == nil:
			code = probed
		case key.mode == wtFence:
			key.mode = wtEpoch // the module as it is, under epoch interruption
			if m, ok := wasmtime.modules[key]; ok {
				return m, nil
			}
		default:
			return nil, err
		}
	}
	e := wasmtime.engines[btoiC(key.mode != wtEpoch)]
	cached := wtCachePath(key)
	m := wtLoadCompiled(e, cached)
	if m == nil {
		var msg *C.char
		if m = C.pgw_compile(e, (*C.uint8_t)(unsafe.Pointer(&code[0])), C.size_t(len(code)), &msg); m == nil {
			defer C.free(unsafe.Pointer(msg))
			return nil, fmt.Errorf("%w: invalid module: %s", engine.ErrDecoder, C.GoString(msg))
		}
		wtStoreCompiled(m, cached)
		engine.CountCompile()
	}
	wasmtime.modules[key] = &wtCompiled{module: m, engine: e, mode: key.mode}
	return wasmtime.modules[key], nil
}

// wtConfigVersion names the engine configuration (pgw_engine_new) in the
// names of compiled modules kept on disk: bump it when that changes, so
// that no module compiled under an older one (tail calls allowed, before
// 2) is even tried.
const wtConfigVersion = 2

// Compiled machine code is kept across processes, as wazero's is
// (diskCache): every fresh Spark Python worker would otherwise spend
// seconds compiling a Go guest. The file is named by the module's SHA-256
// and the engine's configuration; wasmtime refuses a file of another
// version or configuration, and the directory is private to the user.
func wtCachePath(key wtKey) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	dir := filepath.Join(base, "pubsub-go", "wasmtime")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o077 != 0 {
		return "" // shared or unreadable: don't trust machine code from it
	}
	// The machine in the name too: one home directory can serve two
	// (scripts/packaging-check.sh runs the aarch64 library under qemu).
	probes := 0
	if key.mode == wtFence || key.probes {
		probes = wasmrewrite.ProbesVersion
	}
	return filepath.Join(dir, fmt.Sprintf("%x-%d-p%d-c%d-%s.cwasm", key.sum, key.mode, probes, wtConfigVersion, runtime.GOARCH))
}

func wtLoadCompiled(e *C.pgw_opaque, path string) *C.pgw_opaque {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return C.pgw_load_compiled(e, cpath)
}

// wtStoreCompiled writes the machine code through a temporary file and a
// rename, so that a concurrent reader sees all of it or nothing.
func wtStoreCompiled(m *C.pgw_opaque, path string) {
	if path == "" {
		return
	}
	var n C.size_t
	code := C.pgw_serialize(m, &n)
	if code == nil {
		return
	}
	defer C.free(unsafe.Pointer(code))
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(unsafe.Slice((*byte)(unsafe.Pointer(code)), int(n)))
	if cerr := tmp.Close(); err == nil && cerr == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

// wtInstance is one instance in its own store.
type wtInstance struct {
	s     *C.pgw_store
	funcs map[string]*wtFunc
}

// newWasmtimeInstance instantiates the module in a store of its own and
// runs its _initialize, if any (a WASI reactor's; wazero's
// WithStartFunctions does the same).
func (m *wtCompiled) Instantiate(ctx context.Context, limit uint64) (engine.Instance, error) {
	var msg *C.char
	var ec, tc C.int
	s := C.pgw_instantiate(m.engine, m.module, C.int64_t(limit), &msg, &ec, &tc)
	if s == nil {
		return nil, wtError(msg, ec, tc)
	}
	w := &wtInstance{s: s, funcs: map[string]*wtFunc{}}
	if m.mode == wtFence {
		name := C.CString(wasmrewrite.FenceExport)
		ok := C.pgw_fence_setup(s, name, C.size_t(len(wasmrewrite.FenceExport)))
		C.free(unsafe.Pointer(name))
		if !ok { // wasmrewrite.AddProbes adds it to every module it probes
			w.Close()
			return nil, fmt.Errorf("%w: the probed module has no fence page", engine.ErrCrashed)
		}
	}
	if f := w.Export("_initialize"); f != nil {
		if _, err := f.Call(ctx); err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

func (w *wtInstance) Memory() engine.Memory {
	name := "memory"
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if !C.pgw_export(w.s, cname, C.size_t(len(name)), C.PGW_EXTERN_MEMORY, &w.s.memory) {
		return nil
	}
	return wtMemory{w.s}
}

func (w *wtInstance) Export(name string) engine.Func {
	f := &wtFunc{s: w.s, name: name}
	f.ext = (*C.pgw_extern)(C.calloc(1, C.size_t(unsafe.Sizeof(C.pgw_extern{}))))
	f.frame = (*C.pgw_frame)(C.calloc(1, C.size_t(unsafe.Sizeof(C.pgw_frame{}))))
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if !C.pgw_export(w.s, cname, C.size_t(len(name)), C.PGW_EXTERN_FUNC, f.ext) {
		C.free(unsafe.Pointer(f.ext))
		C.free(unsafe.Pointer(f.frame))
		return nil
	}
	w.funcs[name] = f
	return f
}

func (w *wtInstance) Stderr() string {
	n := int(C.pgw_stderr_len(w.s))
	return engine.FirstLines(C.GoBytes(unsafe.Pointer(&w.s.err[0]), C.int(n)))
}

func (w *wtInstance) ResetStderr() { C.pgw_stderr_reset(w.s) }

func (w *wtInstance) Close() {
	for _, f := range w.funcs {
		C.free(unsafe.Pointer(f.ext))
		C.free(unsafe.Pointer(f.frame))
	}
	C.pgw_close(w.s)
}

type wtMemory struct{ s *C.pgw_store }

// view is the guest's memory as it is now: valid until the guest runs
// again (a call may grow it, which can move it).
func (m wtMemory) View() []byte {
	v := C.pgw_memory(m.s)
	if v.p == nil || v.n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(v.p)), int(v.n))
}

func (m wtMemory) Size() uint32 { return abi.View(m.View()).Size() }

func (m wtMemory) Read(off, n uint32) ([]byte, bool) { return abi.View(m.View()).Read(off, n) }

type wtFunc struct {
	s     *C.pgw_store
	ext   *C.pgw_extern // C memory: wasmtime reads it during the call
	frame *C.pgw_frame  // C memory: the call's arguments and results
	name  string
}

// Call runs the export with i32 arguments until ctx's deadline; a cancel
// of ctx stops it at the next tick. pg_free returns nothing, every
// other ABI export one value (docs/decoder-abi.md).
func (f *wtFunc) Call(ctx context.Context, params ...uint64) ([]uint64, error) {
	fr := f.frame // the instance's calls run one at a time (guest.Pool.get)
	if len(params) > len(fr.args) {
		return nil, fmt.Errorf("%s: %d arguments, the ABI's exports take at most %d", f.name, len(params), len(fr.args))
	}
	for i, p := range params {
		fr.args[i] = C.uint32_t(p)
	}
	nres := 1
	if f.name == "pg_free" || f.name == "_initialize" {
		nres = 0
	}
	ticks := uint64(1 << 62)
	if dl, ok := ctx.Deadline(); ok {
		ticks = uint64(time.Until(dl)/epochTick) + 1
	}
	stop := context.AfterFunc(ctx, func() { C.pgw_cancel(f.s) })
	msg := C.pgw_call(f.s, f.ext, fr, C.size_t(len(params)), C.size_t(nres), C.uint64_t(ticks))
	stop()
	if msg != nil {
		err := wtError(msg, fr.exit_code, fr.trap_code)
		var e *wtCallError
		if errors.As(err, &e) && e.msg == wtCanceled && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.msg = wtTimeLimit // the deadline passed between ticks: it is the time limit
		}
		return nil, err
	}
	return []uint64{uint64(fr.res)}[:nres], nil
}

// wtCallError is a failed call: the engine's message, the guest's exit
// code (WASI proc_exit) or trap code when there is one (else -1).
type wtCallError struct {
	msg            string
	exit, trapCode int
}

func (e *wtCallError) Error() string {
	if e.exit >= 0 {
		return fmt.Sprintf("module closed with exit_code(%d)", e.exit)
	}
	return e.msg
}

// wtStackOverflow is WASMTIME_TRAP_CODE_STACK_OVERFLOW.
const wtStackOverflow = 0

// wtError keeps of the engine's message its cause: wasmtime puts the wasm
// backtrace first and the reason after "Caused by:".
func wtError(msg *C.char, exit, trap C.int) error {
	defer C.free(unsafe.Pointer(msg))
	text := C.GoString(msg)
	if _, cause, ok := strings.Cut(text, "Caused by:"); ok {
		var lines []string
		for _, l := range strings.Split(cause, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		text = strings.Join(lines, "; ")
	}
	if trap == wtStackOverflow {
		text = "stack overflow (" + text + ")"
	}
	return &wtCallError{msg: text, exit: int(exit), trapCode: int(trap)}
}

// Classify maps the engine's own stops to the decoder's errors; ok is
// false for any other failure.
func (m *wtCompiled) Classify(err error, what string) (error, bool) {
	var e *wtCallError
	if !errors.As(err, &e) {
		return nil, false
	}
	switch {
	case strings.HasPrefix(e.msg, wtTimeLimit):
		return fmt.Errorf("%w (in %s)", engine.ErrTimeLimit, what), true
	case strings.HasPrefix(e.msg, wtCanceled):
		return fmt.Errorf("decode: %s: %w", what, context.Canceled), true
	}
	return nil, false
}
