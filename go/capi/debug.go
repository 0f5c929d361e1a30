//go:build pubsubgo_debug

package main

// Test hooks (go/include/pubsubgo_debug.h): only in a library built with
// -tags pubsubgo_debug, so the release library does not export them.

/*
#include "pubsubgo.h"
#include "pubsubgo_debug.h"
*/
import "C"

import "unsafe"

//export pg_debug_panic
func pg_debug_panic(errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		var m map[string]int
		m["boom"] = 1 // a real runtime panic: assignment to entry in nil map
		return nil
	})
}

//export pg_debug_c_bytes
func pg_debug_c_bytes() C.int64_t {
	return C.int64_t(alloc.AllocatedBytes())
}

//export Java_io_pubsubgo_spark_bridge_Native_debugPanic
func Java_io_pubsubgo_spark_bridge_Native_debugPanic(env, cls unsafe.Pointer, errAddr C.int64_t) C.int {
	return pg_debug_panic(errp(errAddr))
}
