//go:build pubsubgo_debug

package main

// Test hooks (go/include/pubsubgo_debug.h): only in a library built with
// -tags pubsubgo_debug, so the release library does not export them.

/*
#include "pubsubgo.h"
#include "pubsubgo_debug.h"
*/
import "C"

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

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

// debugPanics counts the panics debugHook raised in this process.
var debugPanics atomic.Int64

// debugHook raises a real Go panic at site when $PUBSUB_GO_DEBUG_PANIC_AT
// is "site:N", the first N times this process reaches it: a test can make a
// Spark task's call into the library panic (take, inside an executor) and
// see what the task, the query and the executor make of it.
func debugHook(site string) {
	name, count, ok := strings.Cut(os.Getenv("PUBSUB_GO_DEBUG_PANIC_AT"), ":")
	if !ok || name != site {
		return
	}
	if n, err := strconv.Atoi(count); err == nil && debugPanics.Add(1) <= int64(n) {
		var m map[string]int
		m[site] = 1 // a runtime panic, as a bug would raise: assignment to entry in nil map
	}
}
