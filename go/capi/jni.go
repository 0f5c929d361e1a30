package main

// The JNI entry points of the JVM front end (jvm/: io.pubsubgo.spark.bridge.Native).
//
// They follow the JNI naming and calling convention but use nothing of
// JNIEnv: every argument is a Java long or int, and pointers are off-heap
// addresses the Java side allocated (for C structs, out parameters and
// NUL-terminated strings). So the library needs no jni.h to build (the
// wheel's cross-compiled builds have none), never calls back into the JVM,
// and holds no JVM reference. Each entry point forwards to the C API
// function of the same meaning (pubsubgo.h) and returns its status; the
// typed reason lands in the PgError at errAddr, which the Java side turns
// into an exception (bridge/NativeError.java). JNIEnv and jclass arrive as
// env and cls and are ignored.

/*
#include "pubsubgo.h"
void pgj_release_array(struct ArrowArray* a);
void pgj_release_schema(struct ArrowSchema* s);
*/
import "C"

import (
	"strings"
	"unsafe"

	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"github.com/pubsub-go/pubsub-go/go/internal/subscriber"
)

func errp(addr C.int64_t) *C.struct_PgError { return (*C.struct_PgError)(ptr(addr)) }

// ptr turns an off-heap address from Java into a C pointer. The memory is
// C memory (never the Go heap), so go vet's unsafeptr check is right to
// flag the conversion in general and wrong here.
func ptr(addr C.int64_t) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

//export Java_io_pubsubgo_spark_bridge_Native_version
func Java_io_pubsubgo_spark_bridge_Native_version(env, cls unsafe.Pointer, jsonOut, errAddr C.int64_t) C.int {
	return pg_version_info((**C.char)(ptr(jsonOut)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_free
func Java_io_pubsubgo_spark_bridge_Native_free(env, cls unsafe.Pointer, p C.int64_t) {
	pg_free((*C.char)(ptr(p)))
}

//export Java_io_pubsubgo_spark_bridge_Native_errorRelease
func Java_io_pubsubgo_spark_bridge_Native_errorRelease(env, cls unsafe.Pointer, errAddr C.int64_t) {
	pg_error_release(errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_releaseArray
func Java_io_pubsubgo_spark_bridge_Native_releaseArray(env, cls unsafe.Pointer, addr C.int64_t) {
	C.pgj_release_array((*C.struct_ArrowArray)(ptr(addr)))
}

//export Java_io_pubsubgo_spark_bridge_Native_releaseSchema
func Java_io_pubsubgo_spark_bridge_Native_releaseSchema(env, cls unsafe.Pointer, addr C.int64_t) {
	C.pgj_release_schema((*C.struct_ArrowSchema)(ptr(addr)))
}

//export Java_io_pubsubgo_spark_bridge_Native_admin
func Java_io_pubsubgo_spark_bridge_Native_admin(env, cls unsafe.Pointer, request, jsonOut, errAddr C.int64_t) C.int {
	return pg_admin((*C.char)(ptr(request)), (**C.char)(ptr(jsonOut)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_subscriberOpen
func Java_io_pubsubgo_spark_bridge_Native_subscriberOpen(env, cls unsafe.Pointer, config, handleOut, errAddr C.int64_t) C.int {
	return pg_subscriber_open((*C.char)(ptr(config)), (*C.uint64_t)(ptr(handleOut)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_subscriberNext
func Java_io_pubsubgo_spark_bridge_Native_subscriberNext(env, cls unsafe.Pointer, h, maxRows, waitMs,
	batch, schema, ackIDs, ackSchema, waitedOut, errAddr C.int64_t) C.int {
	return pg_subscriber_next(C.uint64_t(h), maxRows, waitMs,
		(*C.struct_ArrowArray)(ptr(batch)), (*C.struct_ArrowSchema)(ptr(schema)),
		(*C.struct_ArrowArray)(ptr(ackIDs)), (*C.struct_ArrowSchema)(ptr(ackSchema)),
		(*C.int32_t)(ptr(waitedOut)), errp(errAddr))
}

// The ack-id operations of subscriberAckIds' op argument.
const (
	ackOpAck     = 0
	ackOpNack    = 1
	ackOpModack  = 2
	ackOpRelease = 3
)

// Java_io_pubsubgo_spark_bridge_Native_subscriberAckIds acks, nacks,
// modacks or releases the ack ids in the n bytes at data, one per line.
// Lines, not an Arrow array: the JVM keeps ack ids as text (the batch
// log), and building Arrow arrays in Java would need Arrow Java, whose
// version differs per Spark line.
//
//export Java_io_pubsubgo_spark_bridge_Native_subscriberAckIds
func Java_io_pubsubgo_spark_bridge_Native_subscriberAckIds(env, cls unsafe.Pointer, h C.int64_t, op C.int,
	data, n C.int64_t, deadline C.int, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		s, err := subscribers.get(C.uint64_t(h))
		if err != nil {
			return err
		}
		if n < 0 || (n > 0 && data == 0) {
			return rpc.Errorf(codes.InvalidArgument, "ack ids: %d bytes at address %d", int64(n), int64(data))
		}
		var ids []string
		if n > 0 {
			ids = ackIDLines(C.GoStringN((*C.char)(ptr(data)), C.int(n)))
		}
		return ackOp(s, int(op), ids, int(deadline))
	})
}

// ackIDLines splits text into its non-empty lines. A task's every ack id
// passes here two or three times (lease to the driver, release, ack), so
// the slice is sized by one byte count up front and the lines cut with
// byte scans: strings.FieldsFunc decodes runes one by one and grows its
// slices as it goes, which made it the dearest step of an ack.
func ackIDLines(text string) []string {
	ids := make([]string, 0, strings.Count(text, "\n")+1)
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		if line != "" {
			ids = append(ids, line)
		}
		text = rest
	}
	return ids
}

func ackOp(s *subscriber.Subscriber, op int, ids []string, deadline int) error {
	switch op {
	case ackOpAck:
		return s.Ack(ids)
	case ackOpNack:
		return s.Nack(ids)
	case ackOpModack:
		if deadline < 0 || deadline > 600 {
			return rpc.Errorf(codes.InvalidArgument, "modack deadline %d s is out of range; expected 0..600", deadline)
		}
		return s.Modack(ids, deadline)
	case ackOpRelease:
		s.Release(ids)
		return nil
	}
	return rpc.Errorf(codes.InvalidArgument, "ack id operation %d is unknown; expected 0 (ack), 1 (nack), 2 (modack) or 3 (release)", op)
}

//export Java_io_pubsubgo_spark_bridge_Native_subscriberStats
func Java_io_pubsubgo_spark_bridge_Native_subscriberStats(env, cls unsafe.Pointer, h, out, errAddr C.int64_t) C.int {
	return pg_subscriber_stats(C.uint64_t(h), (*C.struct_PgSubscriberStats)(ptr(out)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_subscriberPause
func Java_io_pubsubgo_spark_bridge_Native_subscriberPause(env, cls unsafe.Pointer, h C.int64_t, paused C.int, errAddr C.int64_t) C.int {
	return pg_subscriber_pause(C.uint64_t(h), paused, errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_subscriberClose
func Java_io_pubsubgo_spark_bridge_Native_subscriberClose(env, cls unsafe.Pointer, h, errAddr C.int64_t) C.int {
	return pg_subscriber_close(C.uint64_t(h), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_emulatorStart
func Java_io_pubsubgo_spark_bridge_Native_emulatorStart(env, cls unsafe.Pointer, hostPort, handleOut, addrOut, errAddr C.int64_t) C.int {
	return pg_emulator_start((*C.char)(ptr(hostPort)), (*C.uint64_t)(ptr(handleOut)), (**C.char)(ptr(addrOut)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_emulatorStop
func Java_io_pubsubgo_spark_bridge_Native_emulatorStop(env, cls unsafe.Pointer, h, errAddr C.int64_t) C.int {
	return pg_emulator_stop(C.uint64_t(h), errp(errAddr))
}
