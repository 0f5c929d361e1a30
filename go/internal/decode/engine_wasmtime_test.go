package decode

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The wasmtime engine (engine_wasmtime.go) against the same tests as
// wazero: the conformance vectors and the hostile modules, run with
// wasmtime as the default engine. The library comes from the installed
// wasmtime Python package; it is installed wherever the project is
// developed and in CI, so its absence fails the test there.

var wasmtimeLibrary = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("python3", "-c", "import wasmtime, os; print(os.path.dirname(wasmtime.__file__))").Output()
	if err != nil {
		return "", errors.New("python3 cannot import wasmtime (pip install wasmtime)")
	}
	libs, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "*", "_libwasmtime.so"))
	if len(libs) != 1 {
		return "", errors.New("the wasmtime package has no single */_libwasmtime.so")
	}
	return libs[0], nil
})

// withWasmtime runs f with wasmtime as the engine of every Spec that
// names none.
func withWasmtime(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	lib, err := wasmtimeLibrary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defaultEngine.name, defaultEngine.lib = EngineWasmtime, lib
	defer func() { defaultEngine.name, defaultEngine.lib = "", "" }()
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
	d := newHostile(t, func(s *Spec) { s.Timeout = 300 * time.Millisecond })
	if d.mod.wt == nil || !d.mod.wt.fence {
		t.Fatalf("not the wasmtime engine with the memory fence: %+v", d.mod.wt)
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
			if m, err := compiledWasmtime(abiModule(body...), defaultEngine.lib, engineOptions{}); err != nil || !m.wt.fence {
				t.Fatalf("not compiled for the fence: %v", err)
			}
			for range 3 {
				start := time.Now()
				// NewDecoder decodes an empty batch, which loops.
				d, err := NewDecoder(context.Background(), Spec{Wasm: abiModule(body...), Format: "fence",
					Timeout: 200 * time.Millisecond}, nil)
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
	d := newHostile(t, func(s *Spec) { s.Timeout, s.engine.epoch = 200*time.Millisecond, true })
	if d.mod.wt == nil || d.mod.wt.fence {
		t.Fatalf("not the wasmtime engine with epoch interruption: %+v", d.mod.wt)
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
	d, err := NewDecoder(context.Background(), Spec{WasmPath: guestModule(t, "internal/testguests/spin/spin.c"),
		Format: "spin", Timeout: 200 * time.Millisecond, MaxInstances: 1}, nil)
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
	_, err := NewDecoder(context.Background(), Spec{Wasm: abiModule(0x20, 0x00, 0x20, 0x01, 0x10, 0x04), Format: "recursion"}, nil)
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "stack overflow") {
		t.Fatalf("want ErrCrashed naming the stack overflow, got %v", err)
	}
	// Out-of-bounds memory is a SIGSEGV caught by wasmtime's handler:
	// pg_decode = i32.load(0xfffffff0).
	_, err = NewDecoder(context.Background(), Spec{Wasm: abiModule(0x41, 0x70, 0x28, 0x02, 0x00), Format: "oob"}, nil)
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
	d := newHostile(t, func(s *Spec) { s.Timeout = 200 * time.Millisecond })
	for i := range 30 {
		payload := []string{"loop", "exit", "alloc"}[i%3]
		if _, _, err := decodeOne(d, payload); err == nil {
			t.Fatalf("%s: no error", payload)
		}
	}
	_, err := NewDecoder(context.Background(), Spec{Wasm: trapModule(), Format: "trap"}, nil)
	if !errors.Is(err, ErrCrashed) {
		t.Fatal(err)
	}
	d2 := newHostile(t, nil)
	assertRecovers(t, d2)
}

func testWasmtimeBadModule(t *testing.T) {
	_, err := NewDecoder(context.Background(), Spec{Wasm: []byte("\x00asm\x01\x00\x00\x00\xff"), Format: "bad"}, nil)
	if !errors.Is(err, ErrDecoder) || !strings.Contains(err.Error(), "invalid module") {
		t.Fatalf("want ErrDecoder for an invalid module, got %v", err)
	}
}

// Goroutines sharing a decoder of 2 instances, some batches timing out:
// each store is used by one goroutine at a time, the module by all.
func testWasmtimeConcurrent(t *testing.T) {
	d := newHostile(t, func(s *Spec) { s.MaxInstances, s.Timeout = 2, 100*time.Millisecond })
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
	_, err := compiledWasmtime(trapModule(), "/nonexistent/_libwasmtime.so", engineOptions{})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/_libwasmtime.so") {
		t.Errorf("a missing library: %v", err)
	}
}

// 1,000 failed batches in one process, each discarding its instance and
// store: memory stays flat and the next batch decodes.
func TestWasmtimeThousandHostileBatches(t *testing.T) {
	withWasmtime(t, func(t *testing.T) {
		d := newHostile(t, func(s *Spec) { s.Timeout = 50 * time.Millisecond }) // instantiation too, on a loaded machine
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

// Compiled code is written once and read back by the next process (here:
// the same one, its in-memory cache emptied).
func TestWasmtimeDiskCache(t *testing.T) {
	withWasmtime(t, func(t *testing.T) {
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		// A module of its own: the trap module with a custom section naming this run.
		wasm := append(trapModule(), append([]byte{0x00, 0x0a, 0x04}, fmt.Sprintf("run%06d", time.Now().Nanosecond()%1e6)...)...)
		spec := Spec{Wasm: wasm, Format: "trap"}
		if _, err := NewDecoder(context.Background(), spec, nil); !errors.Is(err, ErrCrashed) {
			t.Fatalf("want the trap, got %v", err)
		}
		files, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "pubsub-go", "wasmtime", "*.cwasm"))
		if len(files) != 1 {
			t.Fatalf("cache files: %v", files)
		}
		wasmtime.Lock()
		delete(wasmtime.modules, wtKey{sum: sha256.Sum256(wasm)})
		wasmtime.Unlock()
		engines.Lock()
		compiles := engines.compiles
		engines.Unlock()
		start := time.Now()
		if _, err := NewDecoder(context.Background(), spec, nil); !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("from the cache: want the trap, got %v", err)
		}
		t.Logf("from the cache in %v", time.Since(start))
		engines.Lock()
		defer engines.Unlock()
		if engines.compiles != compiles {
			t.Error("compiled again instead of reading the cache")
		}
	})
}

func TestWasmtimeVersionIsChecked(t *testing.T) {
	site := t.TempDir()
	lib := filepath.Join(site, "wasmtime", "linux-x86_64", "_libwasmtime.so")
	if err := checkWasmtimeVersion(lib); err == nil || !strings.Contains(err.Error(), "not in an installed wasmtime package") {
		t.Errorf("no dist-info: %v", err)
	}
	if err := os.Mkdir(filepath.Join(site, "wasmtime-99.0.1.dist-info"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := checkWasmtimeVersion(lib); err == nil || !strings.Contains(err.Error(), "wasmtime 99.0.1 at") ||
		!strings.Contains(err.Error(), fmt.Sprintf("wasmtime==%d.*", wasmtimeMajor)) {
		t.Errorf("another major version: %v", err)
	}
	if lib, err := wasmtimeLibrary(); err == nil {
		if err := checkWasmtimeVersion(lib); err != nil {
			t.Errorf("the installed package: %v", err)
		}
	}
}

// EngineAuto: wasmtime when its library loads, else the whole module in
// wazero (no library given, or one that does not load); an invalid module
// is an error on either, not a reason to fall back.
func TestEngineAuto(t *testing.T) {
	lib, err := wasmtimeLibrary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, c := range []struct {
		lib      string
		wasmtime bool
	}{{lib, true}, {"", false}, {"/nonexistent/_libwasmtime.so", false}} {
		d := newHostile(t, func(s *Spec) { s.Engine, s.WasmtimeLibrary = EngineAuto, c.lib })
		if (d.mod.wt != nil) != c.wasmtime {
			t.Errorf("library %q: wasmtime engine %v, want %v", c.lib, d.mod.wt != nil, c.wasmtime)
		}
		assertRecovers(t, d)
		_, err := NewDecoder(context.Background(), Spec{Wasm: []byte("\x00asm\x01\x00\x00\x00\xff"), Format: "bad",
			Engine: EngineAuto, WasmtimeLibrary: c.lib}, nil)
		if !errors.Is(err, ErrDecoder) || errors.Is(err, errNoWasmtime) {
			t.Errorf("library %q: an invalid module: %v", c.lib, err)
		}
	}
	if err := (&DecoderConfig{Format: "json", Engine: EngineAuto}).Validate(); err != nil {
		t.Errorf("engine auto without a library: %v", err)
	}
}
