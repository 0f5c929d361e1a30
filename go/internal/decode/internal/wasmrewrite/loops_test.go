package wasmrewrite

import (
	"errors"
	"testing"
)

// A module the rewriter cannot parse is refused with ErrNotRewritable
// (the wazero engine then falls back to WithCloseOnContextDone).
func TestInstrumentRejectsWhatItCannotRewrite(t *testing.T) {
	for name, wasm := range map[string][]byte{
		"not wasm": []byte("hello"),
		// a function body with an exception-handling opcode (try, 0x06).
		"unknown opcode": {0, 'a', 's', 'm', 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 7, 1, 5, 0, 0x06, 0x40, 0x0b, 0x0b},
	} {
		if _, err := Instrument(wasm); !errors.Is(err, ErrNotRewritable) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
