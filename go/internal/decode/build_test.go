package decode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Test modules are built from the wasm-decoders sources by
// wasm-decoders/build-guest.sh (the Python tests' builder too), once per
// test binary: Go packages with the local Go toolchain (cached by the Go
// build cache), C files with zig's clang (the ziglang PyPI package,
// installed by scripts/setup.sh). Without zig the C tests skip, except in
// CI (CI set), where they fail.

var (
	wasmDir  string
	wasmOnce sync.Map // source -> *builtModule
)

type builtModule struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pubsub-go-decode-test-")
	if err != nil {
		panic(err)
	}
	wasmDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// guestModule builds src of wasm-decoders (a Go package such as
// "cmd/json", or a C file such as "examples/vpcflow-c/vpcflow.c") to a
// .wasm and returns its path.
func guestModule(tb testing.TB, src string) string {
	tb.Helper()
	v, _ := wasmOnce.LoadOrStore(src, &builtModule{})
	b := v.(*builtModule)
	b.once.Do(func() {
		root, err := filepath.Abs("../../../wasm-decoders")
		if err != nil {
			b.err = err
			return
		}
		name := filepath.Base(src)
		if strings.HasSuffix(name, ".c") {
			name = strings.TrimSuffix(name, ".c") + "_c"
		}
		b.path = filepath.Join(wasmDir, name+".wasm")
		cmd := exec.Command("bash", filepath.Join(root, "build-guest.sh"), b.path, src)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = err
			tb.Logf("build-guest.sh %s: %s", src, out)
		}
	})
	if b.err != nil {
		if strings.HasSuffix(src, ".c") && os.Getenv("CI") == "" {
			tb.Skipf("building %s (C, needs zig: pip install ziglang): %v", src, b.err)
		}
		tb.Fatalf("building %s: %v", src, b.err)
	}
	return b.path
}
