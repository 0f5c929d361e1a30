package decode

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
)

// probeModuleOf assembles a module with one function of type () -> ()
// whose body (no locals) is code, a one-page memory exported as "memory"
// (unless noMemory), and, if withImport, an imported function env.f of
// the same type (function 0; the body is then function 1).
func probeModuleOf(code []byte, withImport, noMemory bool) []byte {
	sec := func(id byte, body []byte) []byte { return append(appendU32([]byte{id}, uint32(len(body))), body...) }
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, sec(1, []byte{1, 0x60, 0, 0})...)
	if withImport {
		m = append(m, sec(2, []byte{1, 3, 'e', 'n', 'v', 1, 'f', 0, 0})...)
	}
	m = append(m, sec(3, []byte{1, 0})...)
	if !noMemory {
		m = append(m, sec(5, []byte{1, 0, 1})...)
		m = append(m, sec(7, []byte{1, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0})...)
	}
	body := append([]byte{0}, code...)
	body = append(body, 0x0b)
	return append(m, sec(10, append(appendU32([]byte{1}, uint32(len(body))), body...))...)
}

var (
	load0 = []byte{0x41, 0, 0x28, 2, 0, 0x1a} // i32.const 0; i32.load; drop (the same bytes as a probe)
	load8 = []byte{0x41, 0, 0x2d, 0, 0, 0x1a} // i32.const 0; i32.load8_u; drop
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Where probes go: at the top of each loop that does not access memory on
// every way round, and before what makes the host touch memory; nowhere
// else. Every probed module stays valid.
func TestProbesGoWhereALoopCouldRunWithoutTouchingMemory(t *testing.T) {
	loop, end, block := []byte{0x03, 0x40}, []byte{0x0b}, []byte{0x02, 0x40}
	for _, c := range []struct {
		name       string
		code       []byte
		withImport bool
		want       int
	}{
		{"an endless loop that touches nothing", cat(loop, []byte{0x0c, 0}, end), false, 1},
		{"a loop that reads memory before branching back", cat(loop, load8, []byte{0x0c, 0}, end), false, 0},
		{"a loop that may branch back before it reads", cat(loop, []byte{0x41, 1, 0x0d, 0}, load8, end), false, 1},
		{"a loop that may leave before it reads", cat(block, loop, []byte{0x41, 1, 0x0d, 1}, load8, []byte{0x0c, 0}, end, end),
			false, 0},
		{"a loop that reads only under an if", cat(loop, []byte{0x41, 0, 0x04, 0x40}, load8, end, []byte{0x0c, 0}, end),
			false, 1},
		{"a loop that branches back from an inner block first", cat(loop, block, []byte{0x41, 1, 0x0d, 1}, end, load8,
			[]byte{0x0c, 0}, end), false, 1},
		{"an inner loop reading memory inside an outer one that does not", cat(loop, loop, load8, []byte{0x41, 1, 0x0d, 0},
			end, []byte{0x41, 1, 0x0d, 0}, end), false, 1},
		{"memory.fill", []byte{0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 11, 0}, false, 1},
		{"memory.grow", []byte{0x41, 1, 0x40, 0, 0x1a}, false, 1},
		{"a call to an import", []byte{0x10, 0}, true, 1},
		{"a call to a defined function", []byte{0x10, 1}, true, 0},
		{"straight-line code", load0, false, 0},
	} {
		wasm := probeModuleOf(c.code, c.withImport, false)
		out, err := addProbes(wasm)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// Each probe adds its bytes; the code section's and the body's
		// sizes stay one byte each here.
		if got := (len(out) - len(wasm)) / len(probe); got != c.want || (len(out)-len(wasm))%len(probe) != 0 {
			t.Errorf("%s: %d probes (%d bytes more), want %d", c.name, got, len(out)-len(wasm), c.want)
		}
		rt := wazero.NewRuntime(context.Background())
		if _, err := rt.CompileModule(context.Background(), out); err != nil {
			t.Errorf("%s: the probed module is not valid: %v", c.name, err)
		}
		rt.Close(context.Background())
	}
}

// The modules we build can all be probed and stay valid with their
// exports; a module without a memory to probe cannot.
func TestProbesAcceptOurModulesAndRefuseOthers(t *testing.T) {
	for _, pkg := range []string{"cmd/json", "cmd/avro", "examples/vpcflow", "examples/vpcflow-c/vpcflow.c",
		"internal/testguests/hostile"} {
		wasm, err := os.ReadFile(guestModule(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		out, err := addProbes(wasm)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		rt := wazero.NewRuntime(context.Background())
		cm, err := rt.CompileModule(context.Background(), out)
		if err != nil {
			t.Fatalf("%s: the probed module does not compile: %v", pkg, err)
		}
		if _, ok := cm.ExportedFunctions()["pg_decode"]; !ok {
			t.Errorf("%s: exports lost", pkg)
		}
		rt.Close(context.Background())
	}
	for name, wasm := range map[string][]byte{
		"not wasm":  []byte("hello"),
		"no memory": probeModuleOf([]byte{0x01}, false, true),
	} {
		if _, err := addProbes(wasm); !errors.Is(err, errNoProbes) {
			t.Errorf("%s: %v, want errNoProbes", name, err)
		}
	}
}
