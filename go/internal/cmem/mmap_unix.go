//go:build unix

package cmem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the transparent huge page size of x86-64 and of arm64 with
// 4 KiB pages.
const hugePage = 2 << 20

// mapAnon returns n bytes of fresh private anonymous memory (zero).
//
// A mapping of hugePage or more starts on a hugePage boundary and asks for
// transparent huge pages (where the kernel offers them on request, the
// common "madvise" setting). A lot's payload buffer is written once from
// start to end right after it is mapped; with 4 KiB pages that write took
// a page fault every 4 KiB, 1.5% of all CPU of a Spark read at 1 KiB
// payloads, and half that with huge pages, which are still zeroed
// (bench/tools/spark_cpu.py pubsub-go-defaults --perf profiles it). The cost in
// memory is at most one partly used huge page per mapping, since the
// buffers are filled from the start.
//
// The mappings are made and returned with MmapPtr and MunmapPtr, not
// syscall.Mmap, which only unmaps whole mappings it made itself.
func mapAnon(n int) []byte {
	if n < hugePage {
		return mmap(n)
	}
	// Map a huge page more, keep the aligned part, return the rest.
	m := mmap(n + hugePage)
	skip := (hugePage - int(addr(m)%hugePage)) % hugePage
	if skip > 0 {
		unmap(m[:skip])
	}
	if tail := m[skip+n:]; len(tail) > 0 {
		unmap(tail)
	}
	m = m[skip : skip+n : skip+n]
	adviseHuge(m)
	return m
}

func mmap(n int) []byte {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		panic("cmem: out of memory: " + err.Error()) // as arrow-go's allocators do
	}
	return unsafe.Slice((*byte)(p), n)
}

// unmap returns a mapping made by mapAnon, or a part of one.
func unmap(m []byte) {
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(m)), uintptr(len(m))); err != nil {
		panic("cmem: munmap: " + err.Error()) // only a slice mapAnon did not return
	}
}

func addr(m []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(m))) }
