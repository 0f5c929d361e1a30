// Package cexport exports Arrow record batches and arrays through the C
// Data Interface to the library's callers (go/capi). It does what
// arrow-go's cdata exporter does, but puts all of an export's C structs in
// one allocation and calls into Go once, when the whole export has been
// released (release.c), where arrow-go makes a cgo handle per array and
// calls into Go at each array's release: on a decoded batch of a dozen
// columns that was a measurable part of a small batch's cost
// (bench/results/decode_results.md). As with any export, the buffers must
// not be Go-heap memory (C keeps pointers to them).
package cexport

/*
#include <stdlib.h>
#include "cexport.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RecordBatch exports rec into out (the caller's struct ArrowArray) as a
// struct array of its columns, without nulls; out keeps rec referenced
// until released. The schema is exported apart when the caller wants it
// (arrow-go's cdata.ExportArrowSchema).
func RecordBatch(rec arrow.RecordBatch, out unsafe.Pointer) {
	cols := make([]arrow.ArrayData, rec.NumCols())
	for i, c := range rec.Columns() {
		cols[i] = c.Data()
	}
	export(rec, rec.NumRows(), cols, out)
}

// Array exports a into out; out keeps a referenced until released.
func Array(a arrow.Array, out unsafe.Pointer) {
	export(a, -1, []arrow.ArrayData{a.Data()}, out)
}

// export writes the export of nodes into out: a struct of rows rows over
// them, or (rows < 0) nodes[0] itself. All but out goes in one C block.
func export(keep interface{ Retain() }, rows int64, nodes []arrow.ArrayData, out unsafe.Pointer) {
	for _, d := range nodes {
		check(d)
	}
	var n count
	if rows >= 0 {
		n = count{arrays: 1, children: len(nodes), buffers: 1}
	}
	for _, d := range nodes {
		n.add(d)
	}
	const head, arr, ptr = unsafe.Sizeof(C.pgx_block{}), unsafe.Sizeof(C.struct_ArrowArray{}), unsafe.Sizeof(unsafe.Pointer(nil))
	inner := n.arrays - 1 // every ArrowArray but the root, which is out
	mem := C.malloc(C.size_t(head + uintptr(inner)*arr + uintptr(n.children+n.buffers)*ptr))
	at := unsafe.Add(mem, head+uintptr(inner)*arr)
	w := writer{
		block:    (*C.pgx_block)(mem),
		arrays:   unsafe.Slice((*C.struct_ArrowArray)(unsafe.Add(mem, head)), inner),
		children: unsafe.Slice((**C.struct_ArrowArray)(at), n.children),
		buffers:  unsafe.Slice((*unsafe.Pointer)(unsafe.Add(at, uintptr(n.children)*ptr)), n.buffers),
	}
	keep.Retain()
	w.block.live = C.int64_t(n.arrays)
	w.block.handle = C.uintptr_t(cgo.NewHandle(keep))
	root := (*C.struct_ArrowArray)(out)
	if rows < 0 {
		w.fill(root, nodes[0])
		return
	}
	*root = C.struct_ArrowArray{length: C.int64_t(rows), n_buffers: 1, n_children: C.int64_t(len(nodes))}
	validity := w.take(1) // a struct without nulls: NULL
	validity[0] = nil
	root.buffers = &validity[0]
	w.fillChildren(root, nodes)
	w.own(root)
}

// count is what an export needs: ArrowArrays, child pointers, buffer
// pointers.
type count struct{ arrays, children, buffers int }

func (n *count) add(d arrow.ArrayData) {
	n.arrays++
	n.buffers += len(buffersOf(d))
	n.children += len(d.Children())
	for _, c := range d.Children() {
		n.add(c)
	}
}

// check refuses what this exporter does not write: dictionaries and the
// view types (their variadic buffers and sizes buffer). Nothing the
// library exports has either.
func check(d arrow.ArrayData) {
	switch id := d.DataType().ID(); {
	case id == arrow.DICTIONARY, id == arrow.STRING_VIEW, id == arrow.BINARY_VIEW:
		panic(fmt.Sprintf("cexport: %s arrays are not supported", d.DataType()))
	}
	for _, c := range d.Children() {
		check(c)
	}
}

// buffersOf is d's buffers as the C Data Interface lists them: arrow-go
// keeps a validity slot even for the types that have no bitmap.
func buffersOf(d arrow.ArrayData) []*memory.Buffer {
	bufs := d.Buffers()
	if len(bufs) > 0 && !hasValidity(d.DataType().ID()) {
		bufs = bufs[1:]
	}
	return bufs
}

// hasValidity: the types whose first buffer is a validity bitmap (all but
// null, unions and run-end encoded).
func hasValidity(id arrow.Type) bool {
	switch id {
	case arrow.NULL, arrow.SPARSE_UNION, arrow.DENSE_UNION, arrow.RUN_END_ENCODED:
		return false
	}
	return true
}

// writer hands out the block's ArrowArrays and pointer arrays in order.
type writer struct {
	block    *C.pgx_block
	arrays   []C.struct_ArrowArray
	children []*C.struct_ArrowArray
	buffers  []unsafe.Pointer
}

func (w *writer) take(n int) []unsafe.Pointer {
	b := w.buffers[:n:n]
	w.buffers = w.buffers[n:]
	return b
}

// fill writes d into dst.
func (w *writer) fill(dst *C.struct_ArrowArray, d arrow.ArrayData) {
	bufs := buffersOf(d)
	*dst = C.struct_ArrowArray{
		length: C.int64_t(d.Len()), null_count: C.int64_t(d.NullN()), offset: C.int64_t(d.Offset()),
		n_buffers: C.int64_t(len(bufs)), n_children: C.int64_t(len(d.Children())),
	}
	if len(bufs) > 0 {
		ptrs := w.take(len(bufs))
		validity := hasValidity(d.DataType().ID())
		for i, b := range bufs {
			switch {
			case b != nil && b.Len() > 0:
				ptrs[i] = unsafe.Pointer(&b.Bytes()[0])
			case i == 0 && validity:
				ptrs[i] = nil // no bitmap: no nulls
			default: // apache/arrow#33936: some consumers take no NULL data buffer
				ptrs[i] = unsafe.Pointer(&C.pgx_zero[0])
			}
		}
		dst.buffers = &ptrs[0]
	}
	w.fillChildren(dst, d.Children())
	w.own(dst)
}

func (w *writer) fillChildren(dst *C.struct_ArrowArray, kids []arrow.ArrayData) {
	if len(kids) == 0 {
		return
	}
	ptrs := w.children[:len(kids):len(kids)]
	w.children = w.children[len(kids):]
	for i, k := range kids {
		a := &w.arrays[0]
		w.arrays = w.arrays[1:]
		w.fill(a, k)
		ptrs[i] = a
	}
	dst.children = &ptrs[0]
}

// own makes dst one of the block's arrays, released by pgx_release.
func (w *writer) own(dst *C.struct_ArrowArray) {
	dst.release = (*[0]byte)(C.pgx_release)
	dst.private_data = unsafe.Pointer(w.block)
}
