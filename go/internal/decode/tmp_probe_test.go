package decode

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"os"
	"github.com/tetratelabs/wazero/api"
	"bytes"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

func TestProbeTmp(t *testing.T) {
	wasm, _ := os.ReadFile(guestModule(t, "cmd/json"))
	bb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	for i := 0; i < 1000; i++ { bb.Append(benchJSON(i)) }
	in := bb.NewBinaryArray()
	d0 := &Decoder{}
	_ = d0
	for name, cfg := range map[string]wazero.RuntimeConfig{
		"compiler": wazero.NewRuntimeConfigCompiler(),
		"compiler+close": wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true),
		"interp": wazero.NewRuntimeConfigInterpreter(),
	} {
		for _, sysClock := range []bool{false, true} {
			ctx := context.Background()
			rt := wazero.NewRuntimeWithConfig(ctx, cfg)
			wasi_snapshot_preview1.MustInstantiate(ctx, rt)
			cm, err := rt.CompileModule(ctx, wasm)
			if err != nil { t.Fatal(err) }
			mc := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize")
			if sysClock { mc = mc.WithSysNanotime().WithSysWalltime() }
			mod, err := rt.InstantiateModule(ctx, cm, mc)
			if err != nil { t.Fatal(err) }
			inst := &instance{mod: mod, mem: mod.Memory(), stderr: &head{}, fns: map[string]api.Function{}}
			for _, n := range []string{"pg_alloc", "pg_free", "pg_init", "pg_decode", "pg_output", "pg_error"} { inst.fns[n] = mod.ExportedFunction(n) }
			cfgb := encodeConfig(schemaBytes(benchSchema), nil)
			if _, err := inst.call(ctx, "pg_init", len(cfgb), func(b []byte) { copy(b, cfgb) }); err != nil { t.Fatal(err) }
			start := time.Now()
			for i := 0; i < 5; i++ {
				if _, err := inst.call(ctx, "pg_decode", inputSize(in), func(b []byte) { fillInput(b, in) }); err != nil { t.Fatal(err) }
			}
			t.Logf("%s sysclock=%v: %v per batch", name, sysClock, time.Since(start)/5)
			rt.Close(ctx)
		}
	}
}

func schemaBytes(s *arrow.Schema) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	w.Close()
	return buf.Bytes()
}
