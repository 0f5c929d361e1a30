//go:build !amd64 && !arm64

package cachehint

// Line is a no-op where the library has no cache-hint instruction.
func Line(*byte, int) {}
