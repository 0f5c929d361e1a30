/*
 * pubsubgo_debug.h: test hooks of libpubsubgo, exported only by a library
 * built with `go build -tags pubsubgo_debug` (go/capi/debug.go), never by
 * the release build. Include after pubsubgo.h. Parsed by cffi in the tests
 * that need it (tests/native_debug.py), so plain C, like pubsubgo.h.
 */
#ifndef PUBSUBGO_DEBUG_H
#define PUBSUBGO_DEBUG_H

#include <stdint.h>

/* Panics inside Go; must come back as 13 INTERNAL, kind "panic". */
int pg_debug_panic(struct PgError* err);

/* Live C memory held by exported Arrow batches, in bytes (leak checks). */
int64_t pg_debug_c_bytes(void);

#endif /* PUBSUBGO_DEBUG_H */
