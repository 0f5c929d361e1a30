//go:build !cgo

package decode

import (
	"context"
	"fmt"
)

// Without cgo there is no wasmtime engine (engine_wasmtime.go).

type wasmtimeModule = *struct{}

var errNoCgo = fmt.Errorf("%w: the wasmtime engine needs a build with cgo", errNoWasmtime)

func compiledWasmtime([]byte, string, engineOptions) (compiledModule, error) {
	return compiledModule{}, errNoCgo
}

func newWasmtimeInstance(context.Context, compiledModule, uint64) (guestInstance, error) {
	return nil, errNoCgo
}

func classifyWasmtime(error, string) (error, bool) { return nil, false }
