package decode

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
)

// Every module we build is rewritable (else it would silently run on the
// slow fallback), and the rewritten module is valid and has the global.
func TestInstrumentAcceptsOurModules(t *testing.T) {
	for _, pkg := range []string{"cmd/json", "cmd/avro", "examples/vpcflow", "internal/testguests/hostile"} {
		wasm, err := os.ReadFile(guestModule(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		out, err := instrument(wasm)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		rt := wazero.NewRuntime(context.Background())
		cm, err := rt.CompileModule(context.Background(), out)
		if err != nil {
			t.Fatalf("%s: the rewritten module does not compile: %v", pkg, err)
		}
		if _, ok := cm.ExportedFunctions()["pg_decode"]; !ok {
			t.Errorf("%s: exports lost", pkg)
		}
		rt.Close(context.Background())
	}
}

func TestInstrumentRejectsWhatItCannotRewrite(t *testing.T) {
	for name, wasm := range map[string][]byte{
		"not wasm": []byte("hello"),
		// a function body with an exception-handling opcode (try, 0x06).
		"unknown opcode": {0, 'a', 's', 'm', 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 7, 1, 5, 0, 0x06, 0x40, 0x0b, 0x0b},
	} {
		if _, err := instrument(wasm); !errors.Is(err, errNotRewritable) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
