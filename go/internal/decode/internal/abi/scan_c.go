package abi

// The two passes load makes over every string column of a module's
// output (scan.go), in C: compilers vectorize these loops and Go's does
// not, and on a batch decoded in wasmtime they were a sixth of the host's
// work around the guest (bench/results/decode_results.md).

/*
#cgo CFLAGS: -O3
#include <stddef.h>
#include <stdint.h>

// pg_ordered: o[0..n] is non-decreasing.
static int pg_ordered(const int32_t *o, size_t n) {
	int bad = 0;
	for (size_t i = 0; i < n; i++) bad |= o[i + 1] < o[i];
	return !bad;
}

// pg_ascii: b[0..n) holds only bytes below 0x80.
static int pg_ascii(const uint8_t *b, size_t n) {
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++) acc |= b[i];
	return acc < 0x80;
}
*/
import "C"

import "unsafe"

// cgoScanMin is the size below which the Go loops run instead: a call
// into C costs about what they take on this much.
const cgoScanMin = 512

// ordered reports whether o is non-decreasing.
func ordered(o []int32) bool {
	if 4*len(o) < cgoScanMin {
		return orderedGo(o)
	}
	return C.pg_ordered((*C.int32_t)(unsafe.Pointer(&o[0])), C.size_t(len(o)-1)) != 0
}

// ascii reports whether b holds only ASCII bytes.
func ascii(b []byte) bool {
	if len(b) < cgoScanMin {
		return asciiGo(b)
	}
	return C.pg_ascii((*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))) != 0
}
