// The release callback of arrays exported by export.go, in C: releasing a
// batch of many columns (one ArrowArray each, and their children) costs
// one call into Go, for the last of them, instead of one each.
#include <stdlib.h>

#include "cexport.h"
#include "_cgo_export.h"

// Consumers that cannot take a NULL buffer get this for an empty one
// (apache/arrow#33936, as arrow-go's exporter does).
const uint64_t pgx_zero[8];

// pgx_release releases a and the children it still owns (a consumer may
// have moved some out, and releases those itself, in any order or thread).
void pgx_release(struct ArrowArray* a) {
  if (a->release == NULL) return;
  for (int64_t i = 0; i < a->n_children; i++) {
    struct ArrowArray* c = a->children[i];
    if (c->release != NULL) c->release(c);
  }
  pgx_block* b = a->private_data;
  a->release = NULL;
  if (__atomic_sub_fetch(&b->live, 1, __ATOMIC_ACQ_REL) == 0) {
    pgxReleaseHandle(b->handle);
    free(b);
  }
}
