package decode

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Test modules are built from the wasm-decoders module with the local Go
// toolchain (cached by the Go build cache), once per test binary.

var (
	wasmDir  string
	wasmOnce sync.Map // package path -> *builtModule
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

// guestModule builds ./<pkg> of wasm-decoders (e.g. "cmd/json") to a .wasm.
func guestModule(tb testing.TB, pkg string) string {
	tb.Helper()
	v, _ := wasmOnce.LoadOrStore(pkg, &builtModule{})
	b := v.(*builtModule)
	b.once.Do(func() {
		src, err := filepath.Abs("../../../wasm-decoders")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(wasmDir, filepath.Base(pkg)+".wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", b.path, "./"+pkg)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = err
			tb.Logf("go build %s: %s", pkg, out)
		}
	})
	if b.err != nil {
		tb.Fatalf("building %s: %v", pkg, b.err)
	}
	return b.path
}
