package decode

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	// The engines that run modules, each registering itself under its
	// name (and preference, for auto). Adding one: its package, its import
	// here, and the contract regenerated (go run ./go/cmd/contract lists
	// EngineNames).
	_ "github.com/pubsub-go/pubsub-go/go/internal/decode/wasmtime"
	_ "github.com/pubsub-go/pubsub-go/go/internal/decode/wazero"
)

// EngineAuto runs a module on the registered engine of highest preference
// that can run here: wasmtime (about 1.7x wazero with the sandbox on,
// RATIONALE.md) where its optional library loads, else wazero, whole.
const EngineAuto = engine.Auto

// DefaultEngine is the engine of a config that names none: the one
// default, which the contract hands to Python (and the JVM).
const DefaultEngine = EngineAuto

// EngineNames are the values decoder.engine accepts: the default first,
// then the engines by preference, lowest first.
func EngineNames() []string { return append([]string{DefaultEngine}, engine.Names()...) }

// engineList is EngineNames quoted and joined for messages: "a", "b" or "c".
func engineList() string {
	names := EngineNames()
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// testEngine, when its name is set, is the engine (and library) of a
// config that names none: this package's tests set it to run their
// modules on wasmtime.
var testEngine struct{ name, lib string }

// compile compiles wasm in the engine named name ("" is DefaultEngine).
func compile(ctx context.Context, name string, wasm []byte, o engine.Options) (engine.Module, error) {
	if name == "" {
		name = DefaultEngine
		if testEngine.name != "" {
			name, o.Library = testEngine.name, testEngine.lib
		}
	}
	if name != EngineAuto {
		e := engine.Lookup(name)
		if e == nil { // Validate (checkEngine) refuses such a name: a Go caller skipped it
			return nil, fmt.Errorf("engine %q is not registered", name)
		}
		return e.Compile(ctx, wasm, o)
	}
	names := engine.Names()
	var err error
	for i := len(names) - 1; i >= 0; i-- {
		var m engine.Module
		if m, err = engine.Lookup(names[i]).Compile(ctx, wasm, o); !errors.Is(err, engine.ErrUnavailable) {
			return m, err
		}
	}
	return nil, err
}
