//go:build amd64 || arm64

package cachehint

// Line asks the CPU to bring the cache line at p+off into its caches. It
// never faults, whatever the address, and is only a hint: p+off may lie
// outside p's allocation (the line before a buffer's first byte).
//
//go:noescape
func Line(p *byte, off int)
