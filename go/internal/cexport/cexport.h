// Declarations shared by export.go and release.c.
#ifndef PG_CEXPORT_H
#define PG_CEXPORT_H
#include <stdint.h>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif

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
