// Package prefetch asks the CPU to fetch memory that the receive path will
// read soon but whose address the hardware prefetcher cannot guess: the
// fields at both ends of each message of a response, the start of the next
// payload to copy. Go has no prefetch intrinsic a package may use, so Line
// is one instruction in assembly (a call of ~1 ns, against ~100 ns for the
// cache miss it avoids).
package prefetch

// CacheLine is the cache line size of the CPUs the library is built for
// (x86-64, arm64 servers).
const CacheLine = 64
