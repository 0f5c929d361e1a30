package decode

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/testlib"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/wasmrewrite"
)

// probeModuleOf assembles a module with one function of type () -> ()
// whose body (no locals) is code, and a one-page memory exported as
// "memory" (or, with importMemory, an imported one).
func probeModuleOf(code []byte, importMemory bool) []byte {
	sec := func(id byte, body []byte) []byte {
		return append(wasmrewrite.AppendU32([]byte{id}, uint32(len(body))), body...)
	}
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, sec(1, []byte{1, 0x60, 0, 0})...)
	if importMemory {
		m = append(m, sec(2, []byte{1, 3, 'e', 'n', 'v', 1, 'm', 2, 0, 1})...)
	}
	m = append(m, sec(3, []byte{1, 0})...)
	if !importMemory {
		m = append(m, sec(5, []byte{1, 0, 1})...)
		m = append(m, sec(7, []byte{1, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0})...)
	}
	body := append([]byte{0}, code...)
	body = append(body, 0x0b)
	return append(m, sec(10, append(wasmrewrite.AppendU32([]byte{1}, uint32(len(body))), body...))...)
}

// The probe wasmrewrite.AddProbes writes for a module with one memory: a read of the
// fence page, memory 1.
var probe1 = []byte{0x41, 0x00, 0x28, 0x42, 0x01, 0x00, 0x1a}

// Every loop gets one probe at its top, and nothing else changes but the
// fence page and its export; the probed module is valid (wasmtime, which
// runs probed modules, compiles it).
func TestProbesGoAtTheTopOfEveryLoop(t *testing.T) {
	lib := testlib.NeedWasmtime(t)
	loop, end, block := []byte{0x03, 0x40}, []byte{0x0b}, []byte{0x02, 0x40}
	for _, c := range []struct {
		name  string
		code  []byte
		loops int
	}{
		{"an endless loop", cat(loop, []byte{0x0c, 0}, end), 1},
		{"a loop that reads memory", cat(loop, []byte{0x41, 0, 0x2d, 0, 0, 0x1a, 0x0c, 0}, end), 1},
		{"nested loops in a block", cat(block, loop, loop, []byte{0x41, 1, 0x0d, 0}, end, []byte{0x41, 1, 0x0d, 1}, end,
			end), 2},
		// 0x03 inside immediates is not a loop: i32.const 3, a memarg of offset 3.
		{"loop bytes in immediates", []byte{0x41, 0x03, 0x1a, 0x41, 0, 0x28, 0x02, 0x03, 0x1a}, 0},
		{"straight-line code", []byte{0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 11, 0}, 0},
	} {
		wasm := probeModuleOf(c.code, false)
		out, err := wasmrewrite.AddProbes(wasm)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := bytes.Count(out, probe1); got != c.loops {
			t.Errorf("%s: %d probes, want %d", c.name, got, c.loops)
		}
		if !bytes.Contains(out, append(wasmrewrite.AppendName(nil, wasmrewrite.FenceExport), 0x02, 0x01)) {
			t.Errorf("%s: no fence page export (memory 1)", c.name)
		}
		// Only the probes, the page (memory and export entries, the
		// sections' counts and sizes) were added.
		if extra := len(out) - len(wasm) - c.loops*len(probe1); extra < 3+len(wasmrewrite.FenceExport)+3 || extra > 3+len(wasmrewrite.FenceExport)+8 {
			t.Errorf("%s: %d bytes added besides the probes", c.name, extra)
		}
		if _, err := compileWasmtime(out, lib, engine.Tuning{NoTimeLimit: true}); err != nil {
			t.Errorf("%s: the probed module does not compile: %v", c.name, err)
		}
	}
}

// The modules we build can all be probed, and run (the engine's tests
// decode with them); one that imports its memory or uses an opcode the
// reader does not know cannot, and runs under epoch interruption instead.
func TestProbesAcceptOurModulesAndRefuseOthers(t *testing.T) {
	for _, pkg := range []string{"cmd/json", "cmd/avro", "examples/vpcflow", "examples/vpcflow-c/vpcflow.c",
		"internal/testguests/hostile", "internal/testguests/spin/spin.c"} {
		wasm, err := os.ReadFile(guestModule(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wasmrewrite.AddProbes(wasm); err != nil {
			t.Errorf("%s: %v", pkg, err)
		}
	}
	imported := probeModuleOf([]byte{0x01}, true)
	for name, wasm := range map[string][]byte{
		"not wasm":        []byte("hello"),
		"imported memory": imported,
		// a function body with an exception-handling opcode (try, 0x06).
		"unknown opcode": {0, 'a', 's', 'm', 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 7, 1, 5, 0, 0x06, 0x40, 0x0b, 0x0b},
	} {
		if _, err := wasmrewrite.AddProbes(wasm); !errors.Is(err, wasmrewrite.ErrNoProbes) {
			t.Errorf("%s: %v, want wasmrewrite.ErrNoProbes", name, err)
		}
	}
	withWasmtime(t, func(t *testing.T) {
		m, err := compileWasmtime(imported, testEngine.lib, engine.Tuning{})
		if err != nil || m.TimeLimit() == "fence" {
			t.Fatalf("a module that cannot be probed: %v, fenced %v (want epoch interruption)", err, m != nil && m.TimeLimit() == "fence")
		}
	})
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
