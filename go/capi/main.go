// Command capi is the C-export layer of libpubsubgo, built with
// -buildmode=c-shared. It only converts between C and Go and guards every
// call (panics become errors); the logic lives in go/internal/... packages.
// The contract is go/include/pubsubgo.h.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include "pubsubgo.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"runtime"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/admin"
	"github.com/pubsub-go/pubsub-go/go/internal/cmem"
	"github.com/pubsub-go/pubsub-go/go/internal/emulator"
	"github.com/pubsub-go/pubsub-go/go/internal/handles"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// ABIVersion changes when pubsubgo.h does (Version is in version.go).
const ABIVersion = 6

// alloc is the C-memory allocator behind every exported batch (cgo rules:
// C must not hold Go-heap pointers); one per process, so its cache of large
// buffers serves every subscriber and decoder.
var alloc = cmem.NewDefault()

var emulators = table[*emulator.Emulator]{what: "emulator"}

func main() {}

//export pg_version
func pg_version(jsonOut **C.char, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		b, err := json.Marshal(map[string]any{"version": Version, "abi": ABIVersion, "go": runtime.Version()})
		setString(jsonOut, string(b))
		return err
	})
}

//export pg_admin
func pg_admin(request *C.char, jsonOut **C.char, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		if request == nil {
			return rpc.Errorf(codes.InvalidArgument, "admin request is NULL")
		}
		r, err := admin.Parse([]byte(C.GoString(request)))
		if err != nil {
			return err
		}
		out, err := admin.Do(context.Background(), r)
		if err != nil {
			return err
		}
		setString(jsonOut, string(out))
		return nil
	})
}

//export pg_emulator_start
func pg_emulator_start(hostPort *C.char, handleOut *C.uint64_t, addrOut **C.char, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		addr := "127.0.0.1:0"
		if hostPort != nil {
			addr = C.GoString(hostPort)
		}
		e, err := emulator.Start(addr)
		if err != nil {
			return rpc.Errorf(codes.InvalidArgument, "%v", err)
		}
		*handleOut = C.uint64_t(emulators.Put(e))
		setString(addrOut, e.Addr())
		return nil
	})
}

//export pg_emulator_stop
func pg_emulator_stop(h C.uint64_t, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		return closeHandle(&emulators, h, func(v *emulator.Emulator) error { return v.Stop() })
	})
}

func closedHandle(what string, h C.uint64_t) error {
	return rpc.Closed("%s handle %d is closed or was never opened", what, uint64(h))
}

// table is the handle registry of one kind of value, named for the error
// an unknown or closed handle gets.
type table[T any] struct {
	handles.Registry[T]
	what string
}

// get is the value of a live handle, else the closed-handle error.
func (t *table[T]) get(h C.uint64_t) (T, error) {
	v, ok := t.Get(uint64(h))
	if !ok {
		return v, closedHandle(t.what, h)
	}
	return v, nil
}

// closeHandle ends h and closes its value; of concurrent calls for one
// handle, one closes it and the others get the closed-handle error.
func closeHandle[T any](t *table[T], h C.uint64_t, close func(T) error) error {
	v, ok := t.Take(uint64(h))
	if !ok {
		return closedHandle(t.what, h)
	}
	return close(v)
}

func carray(p *C.struct_ArrowArray) *cdata.CArrowArray {
	return cdata.ArrayFromPtr(uintptr(unsafe.Pointer(p)))
}

func cschema(p *C.struct_ArrowSchema) *cdata.CArrowSchema {
	return cdata.SchemaFromPtr(uintptr(unsafe.Pointer(p)))
}
