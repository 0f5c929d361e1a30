package decode

import (
	"context"
	"crypto/sha256"
	"fmt"
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
