package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Engine compiles decoder modules (docs/decoder-abi.md) for the Decoder,
// which runs them through the Modules and Instances it returns. Each
// engine is a package of its own (go/internal/decode/wazero, .../wasmtime)
// that registers itself (Register) in its init; the Decoder picks one by
// the name in its config. The sandbox is the engine's to keep: no
// filesystem, network, environment or arguments, the memory cap of
// Options, and the time limit of the context of each call.
type Engine interface {
	// Check is the engine's part of validating a config, before anything
	// is compiled: what it needs of o (wasmtime: its library's path).
	Check(o Options) error
	// Compile compiles wasm (or finds it compiled). An error wrapping
	// ErrUnavailable says the engine cannot run here at all (its library
	// is missing, a build without cgo): "auto" then tries the next
	// engine. An invalid module is ErrDecoder.
	Compile(ctx context.Context, wasm []byte, o Options) (Module, error)
}

// Options are what an engine is given with a module.
type Options struct {
	MemoryPages uint32 // the memory cap of each instance, in 64 KiB pages
	Library     string // the engine's shared library, for an engine that loads one (wasmtime)
	Tuning      Tuning
}

// Tuning changes how a module is compiled; only tests and benchmarks set
// it, and engines keep it in their module cache's key. An engine ignores
// what does not apply to it.
type Tuning struct {
	NoTimeLimit bool // no time limit at all, to measure what the limit costs
	CloseOnDone bool // wazero: WithCloseOnContextDone, the fallback for modules the rewriter refuses
	Epoch       bool // wasmtime: epoch interruption even for a module that can be probed
	Probes      bool // wasmtime with NoTimeLimit: the module probed all the same
}

// Module is a compiled module.
type Module interface {
	Instantiate(ctx context.Context, limit uint64) (Instance, error)
	// External reports whether its instances' memory lies outside the Go
	// heap (wasmtime), so that a batch's buffers may be handed out where
	// the module wrote them instead of copied.
	External() bool
	// TimeLimit says how a runaway call is stopped ("loop counter",
	// "close on done", "fence", "epoch", "none"), for tests and messages.
	TimeLimit() string
	// Classify maps the engine's own ways of stopping a call of one of
	// its instances (its time limit, the caller's cancel) to ErrTimeLimit
	// or context.Canceled; ok is false for any other failure, which the
	// host classifies.
	Classify(err error, what string) (out error, ok bool)
}

// Instance is an instantiated module, used by one goroutine at a time.
type Instance interface {
	Memory() Memory          // nil if the module exports none
	Export(name string) Func // nil if absent
	Stderr() string          // the start of what the guest wrote since ResetStderr (Stderr)
	ResetStderr()
	Close()
}

// Memory is an instance's linear memory as the host reads it between two
// calls (wazero's api.Memory has these methods).
type Memory interface {
	Read(offset, byteCount uint32) ([]byte, bool)
	Size() uint32
}

// Func is an exported function (wazero's api.Function has this method).
type Func interface {
	Call(ctx context.Context, params ...uint64) ([]uint64, error)
}

// ErrUnavailable wraps why an engine cannot run here.
var ErrUnavailable = errors.New("engine unavailable")

// registered are the engines by name, with their preference for "auto".
var registered = struct {
	sync.Mutex
	byName map[string]entry
}{byName: map[string]entry{}}

type entry struct {
	e          Engine
	preference int
}

// Register makes e the engine named name (the value of decoder.engine).
// Auto, the default engine, runs a module on the available engine of
// highest preference. The contract lists the names (go/cmd/contract).
func Register(name string, preference int, e Engine) {
	registered.Lock()
	defer registered.Unlock()
	if _, dup := registered.byName[name]; dup || name == Auto {
		panic(fmt.Sprintf("decode/engine: engine %q registered twice", name))
	}
	registered.byName[name] = entry{e, preference}
}

// Auto is the engine name that means the available engine of highest
// preference.
const Auto = "auto"

// Lookup is the engine named name; nil if none is.
func Lookup(name string) Engine {
	registered.Lock()
	defer registered.Unlock()
	return registered.byName[name].e
}

// Names are the registered engines' names by preference, lowest first
// (the plainest engine first; Auto tries them from the end).
func Names() []string {
	registered.Lock()
	defer registered.Unlock()
	names := make([]string, 0, len(registered.byName))
	for n := range registered.byName {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := registered.byName[a].preference - registered.byName[b].preference; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return names
}

// compiles counts compilations (a module found in a cache is none), for
// tests.
var compiles atomic.Int64

// CountCompile records a compilation.
func CountCompile() { compiles.Add(1) }

// Compiles is the number of compilations so far in this process.
func Compiles() int64 { return compiles.Load() }

// Stderr keeps the start of what the module writes to stderr during one
// call: a Go guest's fatal error or panic message comes first, its
// goroutine dump after.
type Stderr struct {
	mu  sync.Mutex
	buf []byte
}

const stderrMax = 4096

func (t *Stderr) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := stderrMax - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Reset forgets what was written.
func (t *Stderr) Reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}

// String returns the first lines of the text (FirstLines).
func (t *Stderr) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return FirstLines(t.buf)
}

// FirstLines returns the first lines of a guest's stderr (at most 3 and
// 300 bytes): a Go guest's fatal error or panic message comes first, its
// goroutine dump after.
func FirstLines(b []byte) string {
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && len(lines) < 3 {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, "; ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// Unavailable is an error with message msg that matches ErrUnavailable
// (errors.Is): an engine's reason for not running here, in its own words.
func Unavailable(msg string) error { return unavailable(msg) }

type unavailable string

func (u unavailable) Error() string        { return string(u) }
func (u unavailable) Is(target error) bool { return target == ErrUnavailable }
