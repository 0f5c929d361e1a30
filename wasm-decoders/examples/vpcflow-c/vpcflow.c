/* The example decoder of examples/vpcflow (Go) ported to the C SDK: VPC
 * flow log records in the AWS default (version 2) format, one
 * space-separated line per payload:
 *
 *   version account-id interface-id srcaddr dstaddr srcport dstport
 *   protocol packets bytes start end action log-status
 *
 * "-" marks a missing value and becomes null. The host's target schema may
 * pick any of the columns, in any order; without one, all are produced.
 * Output equals the Go version's (go/internal/decode tests compare them). */
#include "pgdecoder.h"

enum kind { TEXT, I32, I64, EPOCH_SECONDS };

static const struct { const char *name; enum kind kind; } columns[] = {
  {"version", I32}, {"account_id", TEXT}, {"interface_id", TEXT},
  {"srcaddr", TEXT}, {"dstaddr", TEXT}, {"srcport", I32}, {"dstport", I32},
  {"protocol", I32}, {"packets", I64}, {"bytes", I64},
  {"start", EPOCH_SECONDS}, {"end", EPOCH_SECONDS}, {"action", TEXT}, {"log_status", TEXT},
};
#define NCOL 14

static pg_field all_fields[NCOL];
static pg_schema all = {NCOL, all_fields};
static int out_col[NCOL]; /* output column of line position i, -1 if not wanted */

static uint32_t len_of(const char *s) { uint32_t n = 0; while (s[n]) n++; return n; }

static void field_of(enum kind k, pg_field *f) {
  f->nullable = 1;
  f->tz = "";
  f->tz_len = 0;
  switch (k) {
  case TEXT: f->type = PG_UTF8; break;
  case I32: f->type = PG_INT; f->p1 = 32; f->p2 = 1; break;
  case I64: f->type = PG_INT; f->p1 = 64; f->p2 = 1; break;
  case EPOCH_SECONDS: f->type = PG_TIMESTAMP; f->p1 = PG_MICRO; f->tz = "UTC"; f->tz_len = 3; break;
  }
}

const char *decoder_init(const pg_schema *target, const pg_options *opts, const pg_schema **out) {
  if (opts->n) return "vpcflow: no options are supported";
  for (int i = 0; i < NCOL; i++) {
    all_fields[i].name = columns[i].name;
    all_fields[i].name_len = len_of(columns[i].name);
    field_of(columns[i].kind, &all_fields[i]);
  }
  const pg_schema *s = target ? target : &all;
  for (int i = 0; i < NCOL; i++) {
    out_col[i] = -1;
    for (uint32_t j = 0; j < s->n; j++) {
      const pg_field *f = &s->fields[j];
      if (!pg_equal(f->name, f->name_len, columns[i].name)) continue;
      const pg_field *w = &all_fields[i];
      if (f->type != w->type || f->p1 != w->p1 || (f->type == PG_INT && f->p2 != w->p2) ||
          (f->type == PG_TIMESTAMP && !pg_equal(f->tz, f->tz_len, w->tz)))
        return "vpcflow: a column has the wrong type (version/srcport/dstport/protocol int32, "
               "packets/bytes int64, start/end timestamp[us, UTC], others utf8)";
      out_col[i] = (int)j;
    }
  }
  for (uint32_t j = 0; j < s->n; j++) {
    int known = 0;
    for (int i = 0; i < NCOL; i++) known |= out_col[i] == (int)j;
    if (!known) return "vpcflow: unknown column in the target schema";
  }
  *out = s;
  return 0;
}

/* space_at is the length of the white space at p[i] (0 if none), as Go's
 * bytes.Fields (unicode.IsSpace) sees it: \t \n \v \f \r, space, and
 * U+0085, U+00A0 (UTF-8 C2 85, C2 A0). */
static inline uint32_t space_at(const uint8_t *p, uint32_t i, uint32_t n) {
  uint8_t c = p[i];
  if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
  if (c == 0xC2 && i + 1 < n && (p[i + 1] == 0x85 || p[i + 1] == 0xA0)) return 2;
  return 0;
}

/* candidate is the first index from i on whose byte may start white
 * space (<= 0x20, or 0xC2), or n. It tests 8 bytes at a time (SWAR: a
 * byte-wise "less than" and "equals" on a 64-bit word, whose lowest set
 * high bit marks the first match exactly): a field is then one or two
 * steps instead of a step per byte. */
#define ONES 0x0101010101010101ull
static inline uint32_t candidate(const uint8_t *p, uint32_t i, uint32_t n) {
  for (; i + 8 <= n; i += 8) {
    uint64_t x, c2;
    __builtin_memcpy(&x, p + i, 8);
    c2 = x ^ (ONES * 0xC2);
    uint64_t m = (((x - ONES * 0x21) & ~x) | ((c2 - ONES) & ~c2)) & (ONES * 0x80);
    if (m) return i + (uint32_t)(__builtin_ctzll(m) >> 3);
  }
  while (i < n && p[i] > 0x20 && p[i] != 0xC2) i++;
  return i;
}

/* digits8 is the value of 8 ASCII digits read little-endian (the first
 * digit in the low byte), or -1 if any byte is not a digit: a few
 * multiplies instead of a loop of 8 steps (as simdjson parses numbers). */
static inline int64_t digits8(uint64_t x) {
  if ((((x & (ONES * 0xF0)) | (((x + ONES * 0x06) & (ONES * 0xF0)) >> 4))) != ONES * 0x33) return -1;
  x = ((x & (ONES * 0x0F)) * 2561) >> 8;
  x = ((x & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
  return (int64_t)(((x & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32);
}

/* lead pads x, whose low m bytes hold the first m digits (1 <= m <= 8),
 * with leading '0' digits to 8. */
static inline uint64_t lead(uint64_t x, uint32_t m) {
  uint64_t low = ((uint64_t)1 << (8 * (8 - m))) - 1; /* the 8 - m padding bytes */
  return ((x << (8 * (8 - m))) & ~low) | (ONES * 0x30 & low);
}

/* number parses the decimal integer p[s:s+m] of the line p[0:n] as
 * pg_parse_i64 does; 0 on success. Up to 16 unsigned digits take one or
 * two 8-byte loads (which stay inside the line); anything else (signs,
 * longer numbers, short lines, errors) takes pg_parse_i64. */
static inline int number(const uint8_t *p, uint32_t n, uint32_t s, uint32_t m, int64_t *v) {
  uint64_t x, y;
  int64_t hi, lo;
  if (m <= 8 && s + 8 <= n) {
    __builtin_memcpy(&x, p + s, 8);
    if ((lo = digits8(lead(x, m))) >= 0) {
      *v = lo;
      return 0;
    }
  } else if (m > 8 && m <= 16) {
    __builtin_memcpy(&x, p + s, 8);
    __builtin_memcpy(&y, p + s + m - 8, 8);
    if ((hi = digits8(lead(x, m - 8))) >= 0 && (lo = digits8(y)) >= 0) {
      *v = hi * 100000000 + lo;
      return 0;
    }
  }
  return pg_parse_i64(p + s, m, v); /* signs, errors, the rest */
}

/* Fields are handled as they are found (no table of field bounds: in wasm
 * that table lives in linear memory, where every access is checked). The
 * errors keep the order of the Go version: the field count first, then
 * the first field that is not a number. */
const char *decoder_decode(const uint8_t *p, uint32_t n, pg_column **cols) {
  uint32_t k = 0, at = 0, w, bad_at = 0, bad_len = 0;
  int bad = 0;
  for (;;) {
    while (at < n && (w = space_at(p, at, n)) != 0) at += w;
    if (at == n) break;
    uint32_t s = at;
    at = candidate(p, at, n);
    while (at < n && space_at(p, at, n) == 0) at = candidate(p, at + 1, n);
    if (k == NCOL) return "want 14 space-separated fields, got more";
    uint32_t m = at - s;
    int j = out_col[k];
    enum kind kind = columns[k].kind;
    k++;
    if (j < 0) continue;
    pg_column *c = cols[j];
    if (m == 1 && p[s] == '-') {
      pg_append_null(c);
      continue;
    }
    if (kind == TEXT) {
      pg_append_bytes(c, p + s, m);
      continue;
    }
    int64_t v;
    if (number(p, n, s, m, &v) || (kind == I32 && (v < -2147483648LL || v > 2147483647LL))) {
      if (!bad) bad = 1, bad_at = s, bad_len = m;
      continue;
    }
    if (kind == EPOCH_SECONDS) v *= 1000000;
    pg_append_int(c, v);
  }
  if (k != NCOL) return "want 14 space-separated fields, got fewer";
  if (bad) return pg_error_text("not a number: ", p + bad_at, bad_len);
  return 0;
}
