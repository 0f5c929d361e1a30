package wazero

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/wasmrewrite"
)

// A hand-assembled function whose br_table branches to its own label (a
// return) among other targets: the rewriter stores the counter before it
// and still reads every label (the module compiles and runs).
func TestInstrumentBranchTableToFunctionLabel(t *testing.T) {
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 5, 1, 0x60, 1, 0x7f, 0, // type 0: (i32) -> ()
		3, 2, 1, 0, // func 0: type 0
		7, 5, 1, 1, 'f', 0, 0, // export "f" = func 0
		10, 17, 1, 15, 0, // code: one body, no locals
		0x02, 0x40, 0x03, 0x40, // block, loop
		0x20, 0, // local.get 0
		0x0e, 2, 2, 1, 2, // br_table [2 (the function), 1 (the block)] default 2
		0x0b, 0x0b, 0x0b} // end loop, end block, end function
	out, err := wasmrewrite.Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	// local.get $counter; global.set $counter: before the br_table and
	// before the function's end (a label misread loses track of the end).
	if n := bytes.Count(out, []byte{0x20, 1, 0x24, 0}); n != 2 {
		t.Fatalf("%d stores of the counter in %x, want 2", n, out)
	}
	m, err := compiled(context.Background(), wasm, 250, engine.Tuning{})
	if err != nil || m.TimeLimit() != "loop counter" {
		t.Fatalf("compiled: %v (time limit by %s)", err, m.TimeLimit())
	}
	mod, err := m.rt.InstantiateModule(context.Background(), m.cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(context.Background())
	for _, x := range []uint64{0, 1, 2} {
		if _, err := mod.ExportedFunction("f").Call(context.Background(), x); err != nil {
			t.Fatalf("f(%d): %v", x, err)
		}
	}
}
