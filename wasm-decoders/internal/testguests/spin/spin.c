/* A decoder (C SDK) that never ends, in a shape the time limit's loop
 * counter must follow across returns (go/internal/decode/interrupt.go): an
 * endless loop calling a function that runs a loop of half the counter's
 * period and returns from inside it. If a callee's iterations were not
 * handed back to its caller, the count would fall by one per outer
 * iteration and reach zero only every 2^30 inner iterations (seconds).
 * A payload "ok" decodes to itself; anything else spins. Schema: one
 * nullable utf8 column "v". */
#include "pgdecoder.h"

static pg_field fields[1] = {{"v", 1, PG_UTF8, 1, 0, 0, "", 0}};
static pg_schema schema = {1, fields};
volatile uint32_t sink;

const char *decoder_init(const pg_schema *target, const pg_options *opts, const pg_schema **out) {
  (void)target;
  (void)opts;
  *out = &schema;
  return 0;
}

__attribute__((noinline)) static uint32_t inner(uint32_t seed) {
#pragma clang loop unroll(disable) /* one wasm loop iteration per source one */
  for (uint32_t i = 0;; i++) {
    seed = seed * 1664525u + 1013904223u;
    if (i == 32768) return seed;
  }
}

const char *decoder_decode(const uint8_t *p, uint32_t n, pg_column **cols) {
  if (n == 2 && p[0] == 'o' && p[1] == 'k') {
    pg_append_bytes(cols[0], p, n);
    return 0;
  }
  uint32_t s = n;
  for (;;) sink = s = inner(s);
}
