//go:build !amd64 && !arm64

package prefetch

// Line is a no-op where the library has no prefetch instruction.
func Line(*byte, int) {}
