// Package guest is the host side of the decoder ABI (docs/decoder-abi.md)
// over any engine: a Pool of module instances of one compiled
// engine.Module, each checked for its ABI version and initialised with
// pg_init, that decodes a batch with one pg_decode call and reads its
// output (ABI 1's Arrow IPC, ABI 2's layout: internal/abi). Engines differ
// in how they compile, instantiate and stop a module; not in this.
package guest

import (
	"context"
	"fmt"
	"strings"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
)

// The decoder ABI versions this host implements (docs/decoder-abi.md):
// 1 (Arrow IPC in and out) and 2 (internal/abi: flat schema, output layout).
const (
	abiVersion1 = 1
	abiVersion2 = 2
)

// Configs are pg_init's config for each ABI version; V2 is nil (with
// V2Err) when the target schema has a type ABI 2 cannot express.
type Configs struct {
	V1, V2 []byte
	V2Err  error
}

// instance is one instantiated module; used by one goroutine at a time.
type instance struct {
	m        engine.Module
	mod      engine.Instance
	mem      engine.Memory
	external bool                      // mem lies outside the Go heap (wasmtime): its buffers may be handed out (pin.go)
	fns      map[string]engine.Func    // the ABI exports by name
	in       struct{ ptr, cap uint32 } // reusable input block
	limit    uint64                    // memory cap in bytes
	abi      int32                     // the module's ABI version
	schema   []byte                    // ABI 2: pg_schema's output (copied)
}

// newInstance instantiates the module with nothing granted but a bounded
// stderr (kept for error messages), checks the ABI version and calls
// pg_init.
func newInstance(ctx context.Context, m engine.Module, cfg *Configs, limit uint64) (*instance, error) {
	in := &instance{m: m, limit: limit}
	var err error
	if in.mod, err = m.Instantiate(ctx, limit); err != nil {
		return nil, in.classify(err, "instantiate")
	}
	in.mem, in.external = in.mod.Memory(), m.External()
	if in.mem == nil {
		in.close()
		return nil, fmt.Errorf("%w: module exports no memory", engine.ErrCrashed)
	}
	version := in.mod.Export("pg_abi_version")
	if version == nil {
		in.close()
		return nil, fmt.Errorf("%w: module does not export pg_abi_version (not a decoder module?)", engine.ErrDecoder)
	}
	res, err := version.Call(ctx)
	if err != nil {
		in.close()
		return nil, in.classify(err, "pg_abi_version")
	}
	in.abi = int32(res[0])
	config := cfg.V1
	exports := []string{"pg_alloc", "pg_free", "pg_init", "pg_decode", "pg_output", "pg_error"}
	switch in.abi {
	case abiVersion1:
	case abiVersion2:
		if cfg.V2Err != nil {
			in.close()
			return nil, cfg.V2Err
		}
		config = cfg.V2
		exports = append(exports, "pg_schema")
	default:
		in.close()
		return nil, fmt.Errorf("%w: module implements decoder ABI %d, host %d and %d", engine.ErrDecoder, in.abi, abiVersion1, abiVersion2)
	}
	in.fns = map[string]engine.Func{}
	for _, name := range exports {
		if in.fns[name] = in.mod.Export(name); in.fns[name] == nil {
			in.close()
			return nil, fmt.Errorf("%w: module does not export %s (required by decoder ABI %d)", engine.ErrDecoder, name, in.abi)
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
		in.mod.Close()
	}
}

// call writes size bytes of input with fill into the module's input block
// and calls the export fn(ptr, size). On success it returns pg_output's bytes, a view
// of module memory valid until the next call.
func (in *instance) call(ctx context.Context, fn string, size int, fill func([]byte)) ([]byte, error) {
	if uint64(size) > uint64(^uint32(0)) {
		return nil, fmt.Errorf("%w: input of %d bytes exceeds 4 GiB", engine.ErrDecoder, size)
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
			return nil, fmt.Errorf("%w: pg_alloc(%d) failed", engine.ErrMemoryLimit, c)
		}
		in.in.ptr, in.in.cap = uint32(res[0]), c
	}
	buf, ok := in.mem.Read(in.in.ptr, uint32(size))
	if !ok {
		return nil, fmt.Errorf("%w: pg_alloc returned an out-of-bounds block", engine.ErrCrashed)
	}
	fill(buf)
	in.mod.ResetStderr()
	res, err := in.fns[fn].Call(ctx, uint64(in.in.ptr), uint64(size))
	if err != nil {
		return nil, in.classify(err, fn)
	}
	if status := int32(res[0]); status != 0 {
		msg, err := in.packed(ctx, "pg_error")
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", engine.ErrDecoder, msg)
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
		return nil, fmt.Errorf("%w: %s returned out-of-bounds memory", engine.ErrCrashed, fn)
	}
	return b, nil
}

// classify turns a failed call into engine.ErrTimeLimit, engine.ErrMemoryLimit or
// engine.ErrCrashed (or the caller's context error).
func (in *instance) classify(err error, what string) error {
	detail := ""
	if in.mod != nil {
		detail = in.mod.Stderr()
	}
	if e, ok := in.m.Classify(err, what); ok {
		return e
	}
	msg, _, _ := strings.Cut(err.Error(), "\n") // drop wazero's wasm stack trace
	if strings.Contains(detail, "out of memory") || in.nearLimit() {
		return fmt.Errorf("%w of %d MiB (in %s: %s)%s", engine.ErrMemoryLimit, in.limit>>20, what, msg, suffix(detail))
	}
	return fmt.Errorf("%w in %s: %s%s", engine.ErrCrashed, what, msg, suffix(detail))
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
