// Declarations shared by export.go and release.c.
#ifndef PG_CEXPORT_H
#define PG_CEXPORT_H
#include <stdint.h>

#include "../../include/pubsubgo.h" // struct ArrowArray, as the library's callers see it

// pgx_block heads the one allocation behind an exported batch: every
// ArrowArray of it (but the caller's root), their child and buffer
// pointer arrays. live counts the ArrowArrays not yet released; the last
// release hands handle (a cgo.Handle of the Go arrays) back to Go.
typedef struct {
  int64_t live;
  uintptr_t handle;
} pgx_block;

void pgx_release(struct ArrowArray* a);
extern const uint64_t pgx_zero[8];
#endif
