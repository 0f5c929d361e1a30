/* A decoder (C SDK) with a column of every flat type the SDK supports,
 * driven by its payload, to test the SDK's output layout
 * (go/internal/decode/sdkc_test.go). A payload is "OPS VALUE": OPS has one
 * character per column, in schema order ('.' untouched, 'n' null, 'v' the
 * value, 'd' the value twice, a mistake the SDK turns into a row error),
 * then optionally 'e' (the row fails with "row error"); VALUE is a decimal
 * integer: bool v&1, integers v truncated to their width, floats v/4,
 * timestamp v, utf8 VALUE's text, binary the whole payload. */
#include "pgdecoder.h"

static pg_field fields[10] = {
  {"b", 1, PG_BOOL, 1, 0, 0, "", 0},     {"i8", 2, PG_INT, 1, 8, 1, "", 0},
  {"i16", 3, PG_INT, 1, 16, 1, "", 0},   {"i32", 3, PG_INT, 1, 32, 1, "", 0},
  {"i64", 3, PG_INT, 1, 64, 1, "", 0},   {"f32", 3, PG_FLOAT, 1, 1, 0, "", 0},
  {"f64", 3, PG_FLOAT, 1, 2, 0, "", 0},  {"s", 1, PG_UTF8, 1, 0, 0, "", 0},
  {"bin", 3, PG_BINARY, 1, 0, 0, "", 0}, {"ts", 2, PG_TIMESTAMP, 1, PG_MICRO, 0, "UTC", 3},
};
static pg_schema schema = {10, fields};

const char *decoder_init(const pg_schema *target, const pg_options *opts, const pg_schema **out) {
  (void)target;
  (void)opts;
  *out = &schema;
  return 0;
}

static void append(int c, pg_column *col, const uint8_t *p, uint32_t n, const uint8_t *num, uint32_t numlen, int64_t v) {
  switch (c) {
  case 0: pg_append_bool(col, (int)(v & 1)); break;
  case 5: case 6: pg_append_float(col, (double)v / 4); break;
  case 7: pg_append_bytes(col, num, numlen); break;
  case 8: pg_append_bytes(col, p, n); break;
  default: pg_append_int(col, v);
  }
}

const char *decoder_decode(const uint8_t *p, uint32_t n, pg_column **cols) {
  uint32_t sp = 0;
  while (sp < n && p[sp] != ' ') sp++;
  if (sp < 10 || sp == n) return "malformed test payload";
  const uint8_t *num = p + sp + 1;
  uint32_t numlen = n - sp - 1;
  int64_t v;
  if (pg_parse_i64(num, numlen, &v)) return "malformed test value";
  for (int c = 0; c < 10; c++) {
    switch (p[c]) {
    case 'n': pg_append_null(cols[c]); break;
    case 'd': append(c, cols[c], p, n, num, numlen, v); /* fall through: a second value */
    case 'v': append(c, cols[c], p, n, num, numlen, v); break;
    }
  }
  return sp > 10 && p[10] == 'e' ? "row error" : 0;
}
