package decode

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// The sandbox: a module that loops, allocates without bound, exits or
// traps fails its batch with a clear error, and the next batch runs on a
// fresh instance in the same (surviving) process.

func newHostile(t *testing.T, mut func(*DecoderConfig)) *Decoder {
	t.Helper()
	spec := DecoderConfig{Wasm: guestModule(t, "internal/testguests/hostile"), Format: "hostile",
		instances: 1, TimeoutMs: 2_000, MemoryLimitMB: 64}
	if mut != nil {
		mut(&spec)
	}
	d, err := NewDecoder(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// decodeOne decodes a single payload and returns the error.
// limitSlack is how much later than its time limit a guest that loops for
// ever may be stopped, in tests, and still count as stopped by the limit.
// It is for a loaded machine (a 2-core CI box running Spark beside the Go
// tests deschedules a process, or starves the limit's ticker, for hundreds
// of milliseconds); a fence or probe that does not work shows otherwise: as
// a guest that never stops (the test binary's timeout), another error, or,
// where a probe is too sparse, a wait of seconds per missed check.
const limitSlack = 5 * time.Second

// spinBound is the spin guest's (testguests/spin: short loops inside
// callees) bound on being stopped at its 200 ms limit. Unlike the guests
// that loop for ever in one place, whose broken fence shows as no stop at
// all, a sparse probe here shows only as a late stop: a check every 2^30
// iterations, about a second or more. So this bound cannot take
// limitSlack and must stay near a second: the 800 ms past the limit are
// its margin against a loaded machine, and the one wall-clock race kept
// on purpose in these tests.
const spinBound = time.Second

func decodeOne(d *Decoder, payload string) (string, string, error) {
	in := binaryArray(payload)
	defer in.Release()
	rec, errs, err := d.Decode(context.Background(), in)
	if err != nil {
		return "", "", err
	}
	defer rec.Release()
	defer errs.Release()
	v := rec.Column(0).(*array.String)
	val, rowErr := "", ""
	if v.IsValid(0) {
		val = v.Value(0)
	}
	if errs.IsValid(0) {
		rowErr = errs.Value(0)
	}
	return val, rowErr, nil
}

// assertRecovers checks that the decoder works again after a failure.
func assertRecovers(t *testing.T, d *Decoder) {
	t.Helper()
	val, rowErr, err := decodeOne(d, "ok")
	if err != nil || val != "ok" || rowErr != "" {
		t.Fatalf("after the failure: %q %q %v", val, rowErr, err)
	}
}

func TestRunawayLoopHitsTimeLimit(t *testing.T) {
	// The interrupt check added to every loop (internal/wasmrewrite), and the
	// fallback for modules it cannot rewrite (wazero's close on context done).
	t.Run("instrumented", func(t *testing.T) { testRunawayLoop(t, false) })
	t.Run("fallback", func(t *testing.T) { testRunawayLoop(t, true) })
}

func testRunawayLoop(t *testing.T, fallback bool) {
	d := newHostile(t, func(s *DecoderConfig) {
		s.TimeoutMs, s.MemoryLimitMB, s.tuning.CloseOnDone = 300, 64+btoi(fallback), fallback
	})
	if (d.guest.Module().TimeLimit() == "loop counter") == fallback {
		t.Fatalf("time limit by %s", d.guest.Module().TimeLimit())
	}
	assertRecovers(t, d)
	start := time.Now()
	_, _, err := decodeOne(d, "loop")
	if !errors.Is(err, ErrTimeLimit) {
		t.Fatalf("want ErrTimeLimit, got %v", err)
	}
	t.Logf("stopped after %v", time.Since(start))
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("stopped after %v", el)
	}
	if !strings.Contains(err.Error(), "hostile decoder") {
		t.Errorf("error does not name the decoder: %v", err)
	}
	assertRecovers(t, d)
}

func TestUnboundedAllocationHitsMemoryCap(t *testing.T) {
	d := newHostile(t, func(s *DecoderConfig) { s.MemoryLimitMB = 48; s.TimeoutMs = 20_000 })
	_, _, err := decodeOne(d, "alloc")
	if !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("want ErrMemoryLimit, got %v", err)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "48 MiB") {
		t.Errorf("error does not give the cap: %v", err)
	}
	assertRecovers(t, d)
}

func TestModuleExitIsCrash(t *testing.T) {
	d := newHostile(t, nil)
	_, _, err := decodeOne(d, "exit")
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "exit_code(3)") {
		t.Fatalf("want ErrCrashed with the exit code, got %v", err)
	}
	assertRecovers(t, d)
}

func TestGuestPanicIsRowError(t *testing.T) {
	d := newHostile(t, nil)
	val, rowErr, err := decodeOne(d, "panic")
	if err != nil || val != "" || !strings.Contains(rowErr, "decoder panic: boom") {
		t.Fatalf("panic: %q %q %v", val, rowErr, err)
	}
	assertRecovers(t, d)
}

func TestCallerCancellation(t *testing.T) {
	d := newHostile(t, func(s *DecoderConfig) { s.TimeoutMs = 60_000 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	in := binaryArray("loop")
	defer in.Release()
	_, _, err := d.Decode(ctx, in)
	if err == nil || errors.Is(err, ErrCrashed) {
		t.Fatalf("cancelled batch: %v", err)
	}
	assertRecovers(t, d)
}

// trapModule is a hand-assembled ABI module whose pg_decode executes
// `unreachable` (Go guests cannot emit a raw trap).
func trapModule() []byte { return abiModule(0x00) }

// abiModule is a hand-assembled ABI 1 module whose pg_decode(ptr, len) is
// decode (an expression ending in an i32 or a trap); the other exports
// do nothing.
func abiModule(decode ...byte) []byte {
	sec := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	var exports []byte
	names := []string{"pg_abi_version", "pg_alloc", "pg_free", "pg_init", "pg_decode", "pg_output", "pg_error"}
	exports = append(exports, byte(len(names)+1))
	for i, n := range names {
		exports = append(append(exports, str(n)...), 0x00, byte(i))
	}
	exports = append(append(exports, str("memory")...), 0x02, 0x00)
	body := func(code ...byte) []byte { return append([]byte{byte(len(code) + 1), 0x00}, code...) }
	var code []byte
	code = append(code, byte(len(names)))
	code = append(code, body(0x41, 0x01, 0x0b)...)        // abi_version: 1
	code = append(code, body(0x41, 0x80, 0x08, 0x0b)...)  // alloc: 1024
	code = append(code, body(0x0b)...)                    // free
	code = append(code, body(0x41, 0x00, 0x0b)...)        // init: 0
	code = append(code, body(append(decode, 0x0b)...)...) // decode
	code = append(code, body(0x42, 0x00, 0x0b)...)        // output: 0
	code = append(code, body(0x42, 0x00, 0x0b)...)        // error: 0
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, sec(0x01, 5, // types
		0x60, 0x00, 0x01, 0x7f, // () -> i32
		0x60, 0x01, 0x7f, 0x01, 0x7f, // (i32) -> i32
		0x60, 0x01, 0x7f, 0x00, // (i32) -> ()
		0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f, // (i32, i32) -> i32
		0x60, 0x00, 0x01, 0x7e)...) // () -> i64
	m = append(m, sec(0x03, 7, 0, 1, 2, 3, 3, 4, 4)...)
	m = append(m, sec(0x05, 1, 0x00, 0x01)...)
	m = append(m, sec(0x07, exports...)...)
	m = append(m, sec(0x0a, code...)...)
	return m
}

func TestTrapIsCrash(t *testing.T) {
	_, err := NewDecoder(context.Background(), DecoderConfig{Module: trapModule(), Format: "trap"}, nil)
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("want ErrCrashed naming unreachable, got %v", err)
	}
	// The process and other decoders are unaffected.
	assertRecovers(t, newHostile(t, nil))
}

func TestNoAmbientAuthority(t *testing.T) {
	t.Setenv("PUBSUB_GO_SECRET", "x")
	val, _, err := decodeOne(newHostile(t, nil), "probe")
	if err != nil || val != "env=0 args=0 file=true dir=true" {
		t.Fatalf("sandbox probe: %q %v", val, err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A C decoder that spins in short loops inside callees (testguests/spin):
// the loop counter travels with calls and returns, so the time limit
// stops it in time.
func TestRunawayLoopAcrossCallsHitsTimeLimit(t *testing.T) {
	d, err := NewDecoder(context.Background(), DecoderConfig{Wasm: guestModule(t, "internal/testguests/spin/spin.c"),
		Format: "spin", TimeoutMs: 200, instances: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.guest.Module().TimeLimit() != "loop counter" {
		t.Fatal("the spin module was not instrumented")
	}
	in := binaryArray("spin")
	defer in.Release()
	start := time.Now()
	_, _, err = d.Decode(context.Background(), in)
	if !errors.Is(err, ErrTimeLimit) {
		t.Fatalf("want ErrTimeLimit, got %v", err)
	}
	t.Logf("stopped after %v", time.Since(start))
	// Were the callee's count lost at each return, the next check would
	// come after 2^30 iterations (seconds); with it, every 65536 (well
	// under a millisecond). See spinBound.
	if el := time.Since(start); el > spinBound {
		t.Fatalf("stopped after %v, want about the 200ms time limit", el)
	}
	ok := binaryArray("ok")
	defer ok.Release()
	rec, errs, err := d.Decode(context.Background(), ok)
	if err != nil || rec.Column(0).(*array.String).Value(0) != "ok" {
		t.Fatalf("after the time limit: %v %v", rec, err)
	}
	rec.Release()
	errs.Release()
}

// A module importing a function the host does not offer is refused when
// the decoder opens, naming the import.
func TestUnofferedImportIsRefused(t *testing.T) {
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
		0x02, 0x0c, 0x01, 0x03, 'e', 'n', 'v', 0x04, 'n', 'o', 'p', 'e', 0x00, 0x00} // import env.nope: func type 0
	_, err := NewDecoder(context.Background(), DecoderConfig{Module: m, Format: "imports"}, nil)
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("want an error naming the import env.nope, got %v", err)
	}
	t.Log(err)
}
