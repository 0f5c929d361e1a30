//go:build !cgo

package wasmtime

import (
	"fmt"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
)

// Without cgo there is no wasmtime engine (engine.go): asked for by name
// it fails, and auto runs modules in wazero.

type wtCompiled struct{ engine.Module }

var errNoCgo = fmt.Errorf("%w: the wasmtime engine needs a build with cgo", errNoWasmtime)

func compiled([]byte, string, engine.Tuning) (*wtCompiled, error) { return nil, errNoCgo }
