// Helpers the JNI layer (jni.go) needs in C: Java cannot call the release
// callbacks of Arrow C Data structs, which are C function pointers.
#include <stddef.h>
#include "pubsubgo.h"

void pgj_release_array(struct ArrowArray* a) {
  if (a != NULL && a->release != NULL) a->release(a);
}

void pgj_release_schema(struct ArrowSchema* s) {
  if (s != NULL && s->release != NULL) s->release(s);
}
