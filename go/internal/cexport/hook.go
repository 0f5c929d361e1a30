package cexport

// #include "cexport.h"
import "C"

import "runtime/cgo"

// pgxReleaseHandle is called by release.c once every ArrowArray of an
// export has been released: it drops the export's reference to the Go
// arrays (and so to their buffers).
//
//export pgxReleaseHandle
func pgxReleaseHandle(h C.uintptr_t) {
	v := cgo.Handle(h)
	v.Value().(interface{ Release() }).Release()
	v.Delete()
}
