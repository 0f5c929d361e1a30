package decode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// The decoder ABI versions this host implements (docs/decoder-abi.md):
// 1 (Arrow IPC in and out) and 2 (internal/abi: flat schema, output layout).
const (
	abiVersion1 = 1
	abiVersion2 = 2
)

// configs are pg_init's config for each ABI version; v2 is nil (with
// v2err) when the target schema has a type ABI 2 cannot express.
type configs struct {
	v1, v2 []byte
	v2err  error
}

// guestInstance is an instantiated module in one engine (wazero or
// wasmtime); abi.Memory and guestFunc are its memory and exports, with
// wazero's method signatures.
type guestInstance interface {
	memory() abi.Memory           // nil if the module exports none
	export(name string) guestFunc // nil if absent
	stderr() string               // what the guest wrote since resetStderr
	resetStderr()
	close()
}

type guestFunc interface {
	Call(ctx context.Context, params ...uint64) ([]uint64, error)
}

// instance is one instantiated module; used by one goroutine at a time.
type instance struct {
	mod      guestInstance
	mem      abi.Memory
	external bool                      // mem lies outside the Go heap (wasmtime): its buffers may be handed out (pin.go)
	fns      map[string]guestFunc      // the ABI exports by name
	in       struct{ ptr, cap uint32 } // reusable input block
	limit    uint64                    // memory cap in bytes
	abi      int32                     // the module's ABI version
	schema   []byte                    // ABI 2: pg_schema's output (copied)
}

// newInstance instantiates the module with nothing granted but a bounded
// stderr (kept for error messages), checks the ABI version and calls
// pg_init.
func newInstance(ctx context.Context, m compiledModule, cfg *configs, limit uint64) (*instance, error) {
	in := &instance{limit: limit}
	var err error
	if m.wt != nil {
		in.mod, err = newWasmtimeInstance(ctx, m, limit)
	} else {
		in.mod, err = newWazeroInstance(ctx, m)
	}
	if err != nil {
		return nil, in.classify(err, "instantiate")
	}
	in.mem, in.external = in.mod.memory(), m.wt != nil
	if in.mem == nil {
		in.close()
		return nil, fmt.Errorf("%w: module exports no memory", ErrCrashed)
	}
	version := in.mod.export("pg_abi_version")
	if version == nil {
		in.close()
		return nil, fmt.Errorf("%w: module does not export pg_abi_version (not a decoder module?)", ErrDecoder)
	}
	res, err := version.Call(ctx)
	if err != nil {
		in.close()
		return nil, in.classify(err, "pg_abi_version")
	}
	in.abi = int32(res[0])
	config := cfg.v1
	exports := []string{"pg_alloc", "pg_free", "pg_init", "pg_decode", "pg_output", "pg_error"}
	switch in.abi {
	case abiVersion1:
	case abiVersion2:
		if cfg.v2err != nil {
			in.close()
			return nil, cfg.v2err
		}
		config = cfg.v2
		exports = append(exports, "pg_schema")
	default:
		in.close()
		return nil, fmt.Errorf("%w: module implements decoder ABI %d, host %d and %d", ErrDecoder, in.abi, abiVersion1, abiVersion2)
	}
	in.fns = map[string]guestFunc{}
	for _, name := range exports {
		if in.fns[name] = in.mod.export(name); in.fns[name] == nil {
			in.close()
			return nil, fmt.Errorf("%w: module does not export %s (required by decoder ABI %d)", ErrDecoder, name, in.abi)
		}
	}
	if _, err := in.call(ctx, "pg_init", len(config), func(b []byte) { copy(b, config) }); err != nil {
		in.close()
		return nil, err
	}
	if in.abi == abiVersion2 {
		s, err := in.packed(ctx, "pg_schema")
		if err != nil {
			in.close()
			return nil, err
		}
		in.schema = append([]byte(nil), s...)
	}
	return in, nil
}

func (in *instance) close() {
	if in.mod != nil {
		in.mod.close()
	}
}

// wazeroInstance is a module instantiated in wazero.
type wazeroInstance struct {
	mod api.Module
	err *head
}

func newWazeroInstance(ctx context.Context, m compiledModule) (guestInstance, error) {
	w := &wazeroInstance{err: &head{}}
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithStderr(w.err)
	mod, err := m.rt.InstantiateModule(ctx, m.cm, mc)
	if err != nil {
		return nil, err
	}
	w.mod = mod
	return w, nil
}

func (w *wazeroInstance) memory() abi.Memory {
	if m := w.mod.Memory(); m != nil {
		return m
	}
	return nil
}

func (w *wazeroInstance) export(name string) guestFunc {
	if f := w.mod.ExportedFunction(name); f != nil {
		return f
	}
	return nil
}

func (w *wazeroInstance) stderr() string { return w.err.String() }
func (w *wazeroInstance) resetStderr()   { w.err.reset() }
func (w *wazeroInstance) close()         { w.mod.Close(context.Background()) }

// call writes size bytes of input with fill into the module's input block
// and calls the export fn(ptr, size). On success it returns pg_output's bytes, a view
// of module memory valid until the next call.
func (in *instance) call(ctx context.Context, fn string, size int, fill func([]byte)) ([]byte, error) {
	if uint64(size) > uint64(^uint32(0)) {
		return nil, fmt.Errorf("%w: input of %d bytes exceeds 4 GiB", ErrDecoder, size)
	}
	if uint32(size) > in.in.cap || in.in.cap == 0 {
		if in.in.cap != 0 {
			if _, err := in.fns["pg_free"].Call(ctx, uint64(in.in.ptr)); err != nil {
				return nil, in.classify(err, "pg_free")
			}
			in.in.cap = 0
		}
		c := max(uint32(size), 2*in.in.cap, 4096)
		res, err := in.fns["pg_alloc"].Call(ctx, uint64(c))
		if err != nil {
			return nil, in.classify(err, "pg_alloc")
		}
		if res[0] == 0 {
			return nil, fmt.Errorf("%w: pg_alloc(%d) failed", ErrMemoryLimit, c)
		}
		in.in.ptr, in.in.cap = uint32(res[0]), c
	}
	buf, ok := in.mem.Read(in.in.ptr, uint32(size))
	if !ok {
		return nil, fmt.Errorf("%w: pg_alloc returned an out-of-bounds block", ErrCrashed)
	}
	fill(buf)
	in.mod.resetStderr()
	res, err := in.fns[fn].Call(ctx, uint64(in.in.ptr), uint64(size))
	if err != nil {
		return nil, in.classify(err, fn)
	}
	if status := int32(res[0]); status != 0 {
		msg, err := in.packed(ctx, "pg_error")
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", ErrDecoder, msg)
	}
	if fn == "pg_init" {
		return nil, nil
	}
	return in.packed(ctx, "pg_output")
}

// packed calls a () -> i64 export returning ptr<<32|len and reads the bytes.
func (in *instance) packed(ctx context.Context, fn string) ([]byte, error) {
	res, err := in.fns[fn].Call(ctx)
	if err != nil {
		return nil, in.classify(err, fn)
	}
	ptr, n := uint32(res[0]>>32), uint32(res[0])
	if n == 0 {
		return nil, nil
	}
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("%w: %s returned out-of-bounds memory", ErrCrashed, fn)
	}
	return b, nil
}

// classify turns a failed call into ErrTimeLimit, ErrMemoryLimit or
// ErrCrashed (or the caller's context error).
func (in *instance) classify(err error, what string) error {
	detail := ""
	if in.mod != nil {
		detail = in.mod.stderr()
	}
	if e, ok := classifyWasmtime(err, what); ok {
		return e
	}
	msg, _, _ := strings.Cut(err.Error(), "\n") // drop wazero's wasm stack trace
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return fmt.Errorf("%w (in %s)", ErrTimeLimit, what)
		case sys.ExitCodeContextCanceled:
			return fmt.Errorf("decode: %s: %w", what, context.Canceled)
		}
	}
	if strings.Contains(detail, "out of memory") || in.nearLimit() {
		return fmt.Errorf("%w of %d MiB (in %s: %s)%s", ErrMemoryLimit, in.limit>>20, what, msg, suffix(detail))
	}
	return fmt.Errorf("%w in %s: %s%s", ErrCrashed, what, msg, suffix(detail))
}

// nearLimit reports whether memory is within 1 MiB of the cap.
func (in *instance) nearLimit() bool {
	return in.mem != nil && uint64(in.mem.Size())+1<<20 >= in.limit
}

func suffix(detail string) string {
	if detail == "" {
		return ""
	}
	return ": " + detail
}

// head keeps the start of what the module writes to stderr during one
// call: a Go guest's fatal error or panic message comes first, its
// goroutine dump after.
type head struct {
	mu  sync.Mutex
	buf []byte
}

const headMax = 4096

func (t *head) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := headMax - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *head) reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}

// String returns the first lines (at most 3 and 300 bytes) of the text.
func (t *head) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(string(t.buf), "\n") {
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
