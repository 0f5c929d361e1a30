package decode

import (
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/wasmrewrite"
)

// Every module we build is rewritable (else it would silently run on the
// slow fallback), and the rewritten module is valid and has the global.
func TestInstrumentAcceptsOurModules(t *testing.T) {
	for _, pkg := range []string{"cmd/json", "cmd/avro", "examples/vpcflow", "internal/testguests/hostile"} {
		wasm, err := os.ReadFile(guestModule(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		out, err := wasmrewrite.Instrument(wasm)
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
