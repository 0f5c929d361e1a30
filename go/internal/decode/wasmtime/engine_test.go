//go:build cgo

package wasmtime

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/testlib"
)

// Compiled code is written once and read back by the next process (here:
// the same one, its in-memory cache emptied).
func TestDiskCache(t *testing.T) {
	lib := testlib.NeedWasmtime(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	// A module of its own: an empty module with a custom section naming this run.
	wasm := append([]byte("\x00asm\x01\x00\x00\x00"), append([]byte{0x00, 0x0a, 0x04}, fmt.Sprintf("run%06d", time.Now().Nanosecond()%1e6)...)...)
	compile := func() {
		t.Helper()
		m, err := Engine{}.Compile(context.Background(), wasm, engine.Options{Library: lib})
		if err != nil {
			t.Fatal(err)
		}
		in, err := m.Instantiate(context.Background(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		in.Close()
	}
	compile()
	files, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "pubsub-go", "wasmtime", "*.cwasm"))
	if len(files) != 1 {
		t.Fatalf("cache files: %v", files)
	}
	wasmtime.Lock()
	delete(wasmtime.modules, wtKey{sum: sha256.Sum256(wasm)})
	wasmtime.Unlock()
	compiles := engine.Compiles()
	start := time.Now()
	compile()
	t.Logf("from the cache in %v", time.Since(start))
	if engine.Compiles() != compiles {
		t.Error("compiled again instead of reading the cache")
	}
}

func TestVersionIsChecked(t *testing.T) {
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
	if lib, err := testlib.WasmtimeLibrary(); err == nil {
		if err := checkWasmtimeVersion(lib); err != nil {
			t.Errorf("the installed package: %v", err)
		}
	}
}
