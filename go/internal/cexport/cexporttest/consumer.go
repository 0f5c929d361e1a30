// Package cexporttest is a C consumer of exports for cexport's tests: it
// moves children out of an exported array and releases arrays in any
// order, as the C Data Interface lets a consumer do. Only tests import it.
package cexporttest

/*
#include <stdlib.h>
#include <string.h>
#include "../cexport.h"

static struct ArrowArray* move_child(struct ArrowArray* a, int64_t i) {
	struct ArrowArray* dst = malloc(sizeof *dst);
	memcpy(dst, a->children[i], sizeof *dst);
	a->children[i]->release = NULL;
	return dst;
}
static void release(struct ArrowArray* a) { if (a->release) a->release(a); }
static int released(struct ArrowArray* a) { return a->release == NULL; }
*/
import "C"

import "unsafe"

// New is an empty struct ArrowArray in C memory (Free frees it).
func New() unsafe.Pointer { return C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_ArrowArray{}))) }

// Free frees a struct New or MoveChild returned.
func Free(a unsafe.Pointer) { C.free(a) }

// MoveChild moves a's child i into a new struct, as a consumer may.
func MoveChild(a unsafe.Pointer, i int) unsafe.Pointer {
	return unsafe.Pointer(C.move_child((*C.struct_ArrowArray)(a), C.int64_t(i)))
}

// Release calls a's release callback, if a is not released yet.
func Release(a unsafe.Pointer) { C.release((*C.struct_ArrowArray)(a)) }

// Released reports whether a has been released (or moved).
func Released(a unsafe.Pointer) bool { return C.released((*C.struct_ArrowArray)(a)) != 0 }
