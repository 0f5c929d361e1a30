package decode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/testlib"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/wasmtime"
)

// The Decoder on the wasmtime engine (package wasmtime) against the same tests as
// wazero: the conformance vectors and the hostile modules, run with
// wasmtime as the default engine. The library comes from the installed
// wasmtime Python package; it is installed wherever the project is
// developed and in CI, so its absence fails the test there.

// compileWasmtime compiles wasm in the wasmtime engine.
func compileWasmtime(wasm []byte, lib string, tuning engine.Tuning) (engine.Module, error) {
	return engine.Lookup(wasmtime.Name).Compile(context.Background(), wasm, engine.Options{Library: lib, Tuning: tuning})
}

// withWasmtime runs f with wasmtime as the engine of every DecoderConfig that
// names none.
func withWasmtime(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	lib := testlib.NeedWasmtime(t)
	testEngine.name, testEngine.lib = wasmtime.Name, lib
	defer func() { testEngine.name, testEngine.lib = "", "" }()
	f(t)
}

func TestWasmtimeConformanceVectors(t *testing.T) {
	withWasmtime(t, TestConformanceVectors)
}

func TestWasmtimeHostile(t *testing.T) {
	withWasmtime(t, func(t *testing.T) {
		for name, f := range map[string]func(*testing.T){
			"loop":        testWasmtimeLoop,
			"spin":        testWasmtimeSpin,
			"alloc":       TestUnboundedAllocationHitsMemoryCap,
			"exit":        TestModuleExitIsCrash,
			"panic":       TestGuestPanicIsRowError,
			"cancel":      TestCallerCancellation,
			"trap":        TestTrapIsCrash,
			"stack":       testWasmtimeStackOverflow,
			"authority":   TestNoAmbientAuthority,
			"import":      TestUnofferedImportIsRefused,
			"go panic":    testGoPanicWithWasmtime,
			"many":        testWasmtimeManyHostile,
			"compile err": testWasmtimeBadModule,
			"concurrent":  testWasmtimeConcurrent,
			"fence":       testWasmtimeFence,
			"epoch":       testWasmtimeEpoch,
		} {
			t.Run(name, f)
		}
	})
}

func testWasmtimeLoop(t *testing.T) {
	d := newHostile(t, func(s *DecoderConfig) { s.TimeoutMs = 300 })
	if l := d.guest.Module().TimeLimit(); l != "fence" {
		t.Fatalf("not the wasmtime engine with the memory fence: %s", l)
	}
	assertRecovers(t, d)
	start := time.Now()
	_, _, err := decodeOne(d, "loop")
	if !errors.Is(err, ErrTimeLimit) {
		t.Fatalf("want ErrTimeLimit, got %v", err)
	}
	if el := time.Since(start); el < 250*time.Millisecond || el > 300*time.Millisecond+limitSlack {
		t.Fatalf("stopped after %v, want about the 300ms time limit", el)
	}
	assertRecovers(t, d)
}

// Hand-assembled guests that loop for ever: without touching memory, and
// mostly inside a libcall that writes the guest's memory (memory.fill of
// 64 KiB, where the fence goes up while the host works). The fence stops
// each at its next probe, at the time limit, and the process carries on.
func testWasmtimeFence(t *testing.T) {
	for name, body := range map[string][]byte{
		"loop touching nothing": {0x03, 0x40, 0x0c, 0x00, 0x0b, 0x41, 0x00},
		"loop of memory.fill": {0x03, 0x40, 0x41, 0x00, 0x41, 0x07, 0x41, 0x80, 0x80, 0x04, 0xfc, 0x0b, 0x00, 0x0c, 0x00,
			0x0b, 0x41, 0x00},
	} {
		t.Run(name, func(t *testing.T) {
			if m, err := compileWasmtime(abiModule(body...), testEngine.lib, engine.Tuning{}); err != nil || m.TimeLimit() != "fence" {
				t.Fatalf("not compiled for the fence: %v", err)
			}
			for range 3 {
				start := time.Now()
				// NewDecoder decodes an empty batch, which loops.
				d, err := NewDecoder(context.Background(), DecoderConfig{Module: abiModule(body...), Format: "fence",
					TimeoutMs: 200}, nil)
				if err == nil {
					_, _, err = decodeOne(d, "x")
					d.Close()
				}
				if el := time.Since(start); !errors.Is(err, ErrTimeLimit) || el > 200*time.Millisecond+limitSlack {
					t.Fatalf("want ErrTimeLimit after about 200ms, got %v after %v", err, el)
				}
			}
			assertRecovers(t, newHostile(t, nil))
		})
	}
}

// A module under epoch interruption (what one that wasmrewrite cannot probe
// gets) is stopped at its time limit too.
func testWasmtimeEpoch(t *testing.T) {
	d := newHostile(t, func(s *DecoderConfig) { s.TimeoutMs, s.tuning.Epoch = 200, true })
	if l := d.guest.Module().TimeLimit(); l != "epoch" {
		t.Fatalf("not the wasmtime engine with epoch interruption: %s", l)
	}
	start := time.Now()
	if _, _, err := decodeOne(d, "loop"); !errors.Is(err, ErrTimeLimit) || time.Since(start) > 200*time.Millisecond+limitSlack {
		t.Fatalf("want ErrTimeLimit after about 200ms, got %v after %v", err, time.Since(start))
	}
	assertRecovers(t, d)
}

// A C decoder spinning in short loops inside callees: a probe sits at the
// top of every loop, so it stops in time.
func testWasmtimeSpin(t *testing.T) {
	d, err := NewDecoder(context.Background(), DecoderConfig{Wasm: guestModule(t, "internal/testguests/spin/spin.c"),
		Format: "spin", TimeoutMs: 200, instances: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	_, _, err = decodeOne(d, "spin")
	if !errors.Is(err, ErrTimeLimit) || time.Since(start) > spinBound {
		t.Fatalf("want ErrTimeLimit after about 200ms, got %v after %v", err, time.Since(start))
	}
}

// Unbounded recursion hits wasmtime's stack limit: a trap (by signal, in
// wasmtime's handler) that fails the batch, and the process carries on.
func testWasmtimeStackOverflow(t *testing.T) {
	// pg_decode(ptr, len) = pg_decode(ptr, len)
	_, err := NewDecoder(context.Background(), DecoderConfig{Module: abiModule(0x20, 0x00, 0x20, 0x01, 0x10, 0x04), Format: "recursion"}, nil)
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "stack overflow") {
		t.Fatalf("want ErrCrashed naming the stack overflow, got %v", err)
	}
	// Out-of-bounds memory is a SIGSEGV caught by wasmtime's handler:
	// pg_decode = i32.load(0xfffffff0).
	_, err = NewDecoder(context.Background(), DecoderConfig{Module: abiModule(0x41, 0x70, 0x28, 0x02, 0x00), Format: "oob"}, nil)
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "out of bounds") {
		t.Fatalf("want ErrCrashed naming the out-of-bounds access, got %v", err)
	}
	assertRecovers(t, newHostile(t, nil))
}

// A nil dereference in Go code, with wasmtime's signal handlers
// installed in front of Go's, is still Go's panic, and recovered.
func testGoPanicWithWasmtime(t *testing.T) {
	assertRecovers(t, newHostile(t, nil)) // wasmtime loaded, handlers installed
	var p *Decoder
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil pointer") {
				t.Fatalf("recovered %v, want a nil pointer panic", r)
			}
		}()
		_ = p.name
	}()
	assertRecovers(t, newHostile(t, nil))
}

// Many failed batches in a row leave one process and its decoder healthy.
// The limit also bounds instantiation (a module's start function), which
// took over 20 ms on a loaded CI machine: 200 ms keeps it clear of that.
func testWasmtimeManyHostile(t *testing.T) {
	d := newHostile(t, func(s *DecoderConfig) { s.TimeoutMs = 200 })
	for i := range 30 {
		payload := []string{"loop", "exit", "alloc"}[i%3]
		if _, _, err := decodeOne(d, payload); err == nil {
			t.Fatalf("%s: no error", payload)
		}
	}
	_, err := NewDecoder(context.Background(), DecoderConfig{Module: trapModule(), Format: "trap"}, nil)
	if !errors.Is(err, ErrCrashed) {
		t.Fatal(err)
	}
	d2 := newHostile(t, nil)
	assertRecovers(t, d2)
}

func testWasmtimeBadModule(t *testing.T) {
	_, err := NewDecoder(context.Background(), DecoderConfig{Module: []byte("\x00asm\x01\x00\x00\x00\xff"), Format: "bad"}, nil)
	if !errors.Is(err, ErrDecoder) || !strings.Contains(err.Error(), "invalid module") {
		t.Fatalf("want ErrDecoder for an invalid module, got %v", err)
	}
}

// Goroutines sharing a decoder of 2 instances, some batches timing out:
// each store is used by one goroutine at a time, the module by all.
func testWasmtimeConcurrent(t *testing.T) {
	d := newHostile(t, func(s *DecoderConfig) { s.instances, s.TimeoutMs = 2, 100 })
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				val, _, err := decodeOne(d, []string{"ok", "loop"}[(g+i)%5/4])
				if (err == nil) != (val == "ok") || (err != nil && !errors.Is(err, ErrTimeLimit)) {
					errs <- fmt.Errorf("goroutine %d batch %d: %q %v", g, i, val, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assertRecovers(t, d)
}

func TestDecoderConfigEngine(t *testing.T) {
	for _, c := range []struct {
		cfg  DecoderConfig
		want string
	}{
		{DecoderConfig{Format: "json", Engine: "v8"}, `decoder.engine "v8" is not an engine`},
		{DecoderConfig{Format: "json", Engine: "wasmtime"}, "needs decoder.wasmtime_library"},
		{DecoderConfig{Format: "json", Engine: "wazero"}, ""},
	} {
		err := c.cfg.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
	// Not loadable, or another library loaded already: either error names it.
	_, err := compileWasmtime(trapModule(), "/nonexistent/_libwasmtime.so", engine.Tuning{})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/_libwasmtime.so") {
		t.Errorf("a missing library: %v", err)
	}
}

// 1,000 failed batches in one process, each discarding its instance and
// store: memory stays flat and the next batch decodes.
func TestWasmtimeThousandHostileBatches(t *testing.T) {
	withWasmtime(t, func(t *testing.T) {
		d := newHostile(t, func(s *DecoderConfig) { s.TimeoutMs = 50 }) // instantiation too, on a loaded machine
		fail := func(n int) {
			for i := range n {
				payload := "exit" // the module exits: its store is discarded
				if i%20 == 19 {
					payload = "loop" // stopped by the time limit
				}
				if _, _, err := decodeOne(d, payload); err == nil {
					t.Fatalf("%s: no error", payload)
				}
			}
		}
		fail(100) // warm up: allocator arenas, compiled code
		before := rssBytes(t)
		fail(900)
		after := rssBytes(t)
		t.Logf("RSS %d MiB before, %d MiB after 900 more failed batches", before>>20, after>>20)
		if after > before+64<<20 {
			t.Errorf("RSS grew from %d to %d MiB", before>>20, after>>20)
		}
		assertRecovers(t, d)
	})
}

func rssBytes(t *testing.T) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// EngineAuto: wasmtime when its library loads, else the whole module in
// wazero (no library given, or one that does not load); an invalid module
// is an error on either, not a reason to fall back.
func TestEngineAuto(t *testing.T) {
	lib := testlib.NeedWasmtime(t)
	for _, c := range []struct {
		lib      string
		wasmtime bool
	}{{lib, true}, {"", false}, {"/nonexistent/_libwasmtime.so", false}} {
		d := newHostile(t, func(s *DecoderConfig) { s.Engine, s.WasmtimeLibrary = EngineAuto, c.lib })
		if got := d.guest.Module().External(); got != c.wasmtime { // wasmtime's memory is outside the Go heap
			t.Errorf("library %q: wasmtime engine %v, want %v", c.lib, got, c.wasmtime)
		}
		assertRecovers(t, d)
		_, err := NewDecoder(context.Background(), DecoderConfig{Module: []byte("\x00asm\x01\x00\x00\x00\xff"), Format: "bad",
			Engine: EngineAuto, WasmtimeLibrary: c.lib}, nil)
		if !errors.Is(err, ErrDecoder) || errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("library %q: an invalid module: %v", c.lib, err)
		}
	}
	if err := (&DecoderConfig{Format: "json", Engine: EngineAuto}).Validate(); err != nil {
		t.Errorf("engine auto without a library: %v", err)
	}
}
