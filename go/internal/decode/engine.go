package decode

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Compiled modules are shared process-wide: one wazero runtime per memory
// cap (the cap is a runtime setting), each module compiled once per
// runtime and found again by the SHA-256 of its bytes. Runtimes live as
// long as the process, like any cache of machine code.
var engines = struct {
	sync.Mutex
	runtimes map[uint32]wazero.Runtime
	modules  map[moduleKey]wazero.CompiledModule
	compiles int // number of compilations, for tests
}{runtimes: map[uint32]wazero.Runtime{}, modules: map[moduleKey]wazero.CompiledModule{}}

type moduleKey struct {
	sum   [sha256.Size]byte
	pages uint32
}

// compiled returns the runtime for a memory cap of pages and wasm compiled in it.
func compiled(ctx context.Context, wasm []byte, pages uint32) (wazero.Runtime, wazero.CompiledModule, error) {
	key := moduleKey{sha256.Sum256(wasm), pages}
	engines.Lock()
	defer engines.Unlock()
	rt, ok := engines.runtimes[pages]
	if !ok {
		cfg := wazero.NewRuntimeConfig().
			WithMemoryLimitPages(pages).
			WithCloseOnContextDone(true)
		if cache := diskCache(); cache != nil {
			cfg = cfg.WithCompilationCache(cache)
		}
		rt = wazero.NewRuntimeWithConfig(context.Background(), cfg)
		// WASI with nothing granted: the module config gives no files,
		// environment, arguments or network; clocks and randomness are
		// wazero's deterministic defaults.
		if _, err := wasi_snapshot_preview1.Instantiate(context.Background(), rt); err != nil {
			return nil, nil, fmt.Errorf("decode: WASI: %w", err)
		}
		engines.runtimes[pages] = rt
	}
	if cm, ok := engines.modules[key]; ok {
		return rt, cm, nil
	}
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: invalid module: %v", ErrDecoder, err)
	}
	engines.modules[key] = cm
	engines.compiles++
	return rt, cm, nil
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
