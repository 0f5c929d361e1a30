package decode

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/wasmrewrite"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Compiled modules are shared process-wide: one wazero runtime per memory
// cap (the cap is a runtime setting) and way of enforcing the time limit
// (internal/wasmrewrite), each module compiled once per runtime and found again by
// the SHA-256 of its bytes. Runtimes live as long as the process, like any
// cache of machine code.
var engines = struct {
	sync.Mutex
	runtimes map[runtimeKey]wazero.Runtime
	modules  map[moduleKey]compiledModule
	compiles int // number of compilations, for tests
}{runtimes: map[runtimeKey]wazero.Runtime{}, modules: map[moduleKey]compiledModule{}}

type runtimeKey struct {
	pages uint32
	close bool // WithCloseOnContextDone: the fallback for modules instrument rejects
}

type compiledModule struct {
	rt           wazero.Runtime
	cm           wazero.CompiledModule
	instrumented bool           // has the interrupt global (internal/wasmrewrite)
	wt           wasmtimeModule // the wasmtime engine's instead (engine_wasmtime.go)
}

// engineOptions change how a module is compiled; only this package's
// tests and benchmarks set them (Spec.engine). closeOnDone forces the
// fallback (to measure and test it); noTimeLimit compiles modules without
// any time limit, to measure what the limit costs. Both are part of the
// module cache's key.
type engineOptions struct {
	closeOnDone, noTimeLimit bool
	epoch                    bool // wasmtime: epoch interruption even for a module wasmrewrite can probe
	probes                   bool // wasmtime with noTimeLimit: the module probed all the same
}

type moduleKey struct {
	sum   [sha256.Size]byte
	pages uint32
	opts  engineOptions
}

// compiled returns wasm compiled for a memory cap of pages: instrumented
// with the interrupt check when possible, else in a runtime that closes
// modules when their context is done.
func compiled(ctx context.Context, wasm []byte, pages uint32, opts engineOptions) (compiledModule, error) {
	key := moduleKey{sha256.Sum256(wasm), pages, opts}
	engines.Lock()
	defer engines.Unlock()
	if m, ok := engines.modules[key]; ok {
		return m, nil
	}
	code, err := wasmrewrite.Instrument(wasm)
	if opts.closeOnDone {
		err = wasmrewrite.ErrNotRewritable
	}
	rkey := runtimeKey{pages: pages, close: err != nil}
	if err != nil {
		code = wasm
	}
	if opts.noTimeLimit {
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
			return compiledModule{}, fmt.Errorf("decode: WASI: %w", err)
		}
		if _, err := rt.NewHostModuleBuilder(wasmrewrite.TickModule).NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(tick), nil, []api.ValueType{api.ValueTypeI32}).
			Export(wasmrewrite.TickName).Instantiate(context.Background()); err != nil {
			return compiledModule{}, fmt.Errorf("decode: %s.%s: %w", wasmrewrite.TickModule, wasmrewrite.TickName, err)
		}
		engines.runtimes[rkey] = rt
	}
	cm, err := rt.CompileModule(ctx, code)
	if err != nil {
		return compiledModule{}, fmt.Errorf("%w: invalid module: %v", ErrDecoder, err)
	}
	// wazero's own error for these names only the module ("module[env]
	// not instantiated"); wasmtime's names the function too.
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod != wasi_snapshot_preview1.ModuleName && mod != wasmrewrite.TickModule {
			cm.Close(ctx)
			return compiledModule{}, fmt.Errorf("%w: unknown import: the module imports %s::%s, which the host "+
				"does not offer (a decoder module may import WASI preview 1 only)", ErrDecoder, mod, name)
		}
	}
	m := compiledModule{rt: rt, cm: cm, instrumented: !rkey.close}
	engines.modules[key] = m
	engines.compiles++
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
