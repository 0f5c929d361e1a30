//go:build unix

package cmem

import "syscall"

// mapAnon returns n bytes of fresh private anonymous memory (zero).
func mapAnon(n int) []byte {
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		panic("cmem: out of memory: " + err.Error()) // as arrow-go's allocators do
	}
	return m
}

// unmap returns a mapping made by mapAnon.
func unmap(m []byte) {
	if err := syscall.Munmap(m); err != nil {
		panic("cmem: munmap: " + err.Error()) // only a slice mapAnon did not return
	}
}
