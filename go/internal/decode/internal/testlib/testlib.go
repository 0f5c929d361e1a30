// Package testlib holds what the decode packages' tests share: finding
// wasmtime's library, which the wasmtime engine's tests and the Decoder's
// (run on every engine) both need.
package testlib

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// WasmtimeLibrary is the C library of the installed wasmtime Python
// package; it is installed wherever the project is developed and in CI.
var WasmtimeLibrary = sync.OnceValues(func() (string, error) {
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

// NeedWasmtime is WasmtimeLibrary, or the test skipped without it (failed
// in CI, where it must be installed).
func NeedWasmtime(t testing.TB) string {
	t.Helper()
	lib, err := WasmtimeLibrary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return lib
}
