package wasmtime

import (
	"context"
	"errors"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
)

// Name is the engine's name in decoder.engine.
const Name = "wasmtime"

// Preference 2: "auto" runs a module here, about 1.7x wazero with the
// sandbox on (RATIONALE.md), and in wazero where wasmtime's library is
// missing (it is an optional Python package) or does not load.
func init() { engine.Register(Name, 2, Engine{}) }

// Engine is the wasmtime engine; Options.Library is the path of
// wasmtime's C library.
type Engine struct{}

// errNoLibrary is Check's error: the one thing this engine needs given.
var errNoLibrary = errors.New("needs decoder.wasmtime_library, the path of wasmtime's C library " +
	"(_libwasmtime.so in the wasmtime Python package)")

// Check requires the library's path when the engine is asked for by name
// (auto does not check: without a library it runs the module in wazero).
func (Engine) Check(o engine.Options) error {
	if o.Library == "" {
		return errNoLibrary
	}
	return nil
}

func (Engine) Compile(_ context.Context, wasm []byte, o engine.Options) (engine.Module, error) {
	m, err := compiled(wasm, o.Library, o.Tuning)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// errNoWasmtime wraps why the engine cannot run here (no library path, a
// library that does not load or is of another version, no cgo): auto then
// runs the module in the next engine (wazero).
var errNoWasmtime = engine.Unavailable("no usable wasmtime library")
