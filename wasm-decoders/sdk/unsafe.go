package sdk

import (
	"errors"
	"unsafe"
)

var (
	errBadBlock = errors.New("pointer/length is not inside a pg_alloc block")
	errNoInit   = errors.New("pg_decode before a successful pg_init")
)

// unsafePointer is the address of b's first byte.
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
