// Package wazero is the wazero engine (the pure-Go WebAssembly runtime,
// linked in): a decoder module runs in a wazero runtime whose config caps
// its memory, with WASI imported and nothing granted. The time limit is a
// loop counter the host adds to the module before compiling it
// (internal/wasmrewrite), else wazero's WithCloseOnContextDone.
package wazero

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/wasmrewrite"
)

// Name is the engine's name in decoder.engine.
const Name = "wazero"

// Preference 1: built in, it runs everywhere; "auto" runs a module here
// when wasmtime (preference 2) cannot run.
func init() { engine.Register(Name, 1, Engine{}) }

// Engine is the wazero engine; it needs nothing of its options.
type Engine struct{}

func (Engine) Check(engine.Options) error { return nil }

func (Engine) Compile(ctx context.Context, wasm []byte, o engine.Options) (engine.Module, error) {
	return compiled(ctx, wasm, o.MemoryPages, o.Tuning)
}

// Compiled modules are shared process-wide: one wazero runtime per memory
// cap (the cap is a runtime setting) and way of enforcing the time limit
// (internal/wasmrewrite), each module compiled once per runtime and found again by
// the SHA-256 of its bytes. Runtimes live as long as the process, like any
// cache of machine code.
var engines = struct {
	sync.Mutex
	runtimes map[runtimeKey]wazero.Runtime
	modules  map[moduleKey]*module
}{runtimes: map[runtimeKey]wazero.Runtime{}, modules: map[moduleKey]*module{}}

type runtimeKey struct {
	pages uint32
	close bool // WithCloseOnContextDone: the fallback for modules instrument rejects
}

// module is a compiled module and the runtime it was compiled in.
type module struct {
	rt    wazero.Runtime
	cm    wazero.CompiledModule
	limit string // TimeLimit
}

// External is false: wazero's memory is a Go slice, which must not cross
// the C Data Interface, so its batches are copied out.
func (m *module) External() bool { return false }

func (m *module) TimeLimit() string { return m.limit }

type moduleKey struct {
	sum   [sha256.Size]byte
	pages uint32
	opts  engine.Tuning
}

// compiled returns wasm compiled for a memory cap of pages: instrumented
// with the interrupt check when possible, else in a runtime that closes
// modules when their context is done.
func compiled(ctx context.Context, wasm []byte, pages uint32, opts engine.Tuning) (*module, error) {
	key := moduleKey{sha256.Sum256(wasm), pages, opts}
	engines.Lock()
	defer engines.Unlock()
	if m, ok := engines.modules[key]; ok {
		return m, nil
	}
	code, err := wasmrewrite.Instrument(wasm)
	if opts.CloseOnDone {
		err = wasmrewrite.ErrNotRewritable
	}
	rkey := runtimeKey{pages: pages, close: err != nil}
	if err != nil {
		code = wasm
	}
	if opts.NoTimeLimit {
		code, rkey.close = wasm, false
	}
	rt, ok := engines.runtimes[rkey]
	if !ok {
		cfg := wazero.NewRuntimeConfig().
			WithMemoryLimitPages(pages).
			WithCloseOnContextDone(rkey.close)
		if cache := diskCache(); cache != nil {
			cfg = cfg.WithCompilationCache(cache)
		}
		rt = wazero.NewRuntimeWithConfig(context.Background(), cfg)
		// WASI with nothing granted: the module config gives no files,
		// environment, arguments or network; clocks and randomness are
		// wazero's deterministic defaults.
		if _, err := wasi_snapshot_preview1.Instantiate(context.Background(), rt); err != nil {
			return nil, fmt.Errorf("decode: WASI: %w", err)
		}
		if _, err := rt.NewHostModuleBuilder(wasmrewrite.TickModule).NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(tick), nil, []api.ValueType{api.ValueTypeI32}).
			Export(wasmrewrite.TickName).Instantiate(context.Background()); err != nil {
			return nil, fmt.Errorf("decode: %s.%s: %w", wasmrewrite.TickModule, wasmrewrite.TickName, err)
		}
		engines.runtimes[rkey] = rt
	}
	cm, err := rt.CompileModule(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("%w: invalid module: %v", engine.ErrDecoder, err)
	}
	// wazero's own error for these names only the module ("module[env]
	// not instantiated"); wasmtime's names the function too.
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod != wasi_snapshot_preview1.ModuleName && mod != wasmrewrite.TickModule {
			cm.Close(ctx)
			return nil, fmt.Errorf("%w: unknown import: the module imports %s::%s, which the host "+
				"does not offer (a decoder module may import WASI preview 1 only)", engine.ErrDecoder, mod, name)
		}
	}
	m := &module{rt: rt, cm: cm, limit: "loop counter"} // has wasmrewrite.Instrument's counter
	switch {
	case opts.NoTimeLimit:
		m.limit = "none"
	case rkey.close:
		m.limit = "close on done"
	}
	engines.modules[key] = m
	engine.CountCompile()
	return m, nil
}

// tick is what an instrumented module calls every wasmrewrite.TickEvery loop
// iterations (internal/wasmrewrite): it ends the call once its context is done,
// else it returns the counter's next value. ctx is the one the host passed
// to the export the guest is running.
func tick(ctx context.Context, _ api.Module, stack []uint64) {
	switch err := ctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	case err != nil:
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	stack[0] = wasmrewrite.TickEvery
}

// diskCache keeps compiled machine code across processes: every fresh
// Spark Python worker would otherwise spend 1-2 s compiling the built-in
// modules. The directory is private to the user (0700); without one the
// runtime compiles in memory as before.
var diskCache = sync.OnceValue(func() wazero.CompilationCache {
	base, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	dir := filepath.Join(base, "pubsub-go", "wazero")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o077 != 0 {
		return nil // shared or unreadable: don't trust machine code from it
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil
	}
	return cache
})

// instance is a module instantiated in wazero.
type instance struct {
	mod api.Module
	err *engine.Stderr
}

// Instantiate runs the module's _initialize (a WASI reactor's) with
// nothing granted but a bounded stderr, kept for error messages. The
// memory cap is the runtime's.
func (m *module) Instantiate(ctx context.Context, _ uint64) (engine.Instance, error) {
	w := &instance{err: &engine.Stderr{}}
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithStderr(w.err)
	mod, err := m.rt.InstantiateModule(ctx, m.cm, mc)
	if err != nil {
		return nil, err
	}
	w.mod = mod
	return w, nil
}

func (w *instance) Memory() engine.Memory {
	if m := w.mod.Memory(); m != nil {
		return m
	}
	return nil
}

func (w *instance) Export(name string) engine.Func {
	if f := w.mod.ExportedFunction(name); f != nil {
		return f
	}
	return nil
}

func (w *instance) Stderr() string { return w.err.String() }
func (w *instance) ResetStderr()   { w.err.Reset() }
func (w *instance) Close()         { w.mod.Close(context.Background()) }

// Classify maps the exit codes by which tick (and WithCloseOnContextDone)
// end a call.
func (m *module) Classify(err error, what string) (error, bool) {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return fmt.Errorf("%w (in %s)", engine.ErrTimeLimit, what), true
		case sys.ExitCodeContextCanceled:
			return fmt.Errorf("decode: %s: %w", what, context.Canceled), true
		}
	}
	return nil, false
}
