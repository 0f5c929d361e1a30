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

const char *decoder_decode(const uint8_t *p, uint32_t n, pg_column **cols) {
  const uint8_t *start[NCOL];
  uint32_t len[NCOL];
  int k = 0;
  uint32_t at = 0, w;
  for (;;) {
    while (at < n && (w = space_at(p, at, n)) != 0) at += w;
    if (at == n) break;
    uint32_t s = at;
    at = candidate(p, at, n);
    while (at < n && space_at(p, at, n) == 0) at = candidate(p, at + 1, n);
    if (k == NCOL) return "want 14 space-separated fields, got more";
    start[k] = p + s;
    len[k++] = at - s;
  }
  if (k != NCOL) return "want 14 space-separated fields, got fewer";
  for (int i = 0; i < NCOL; i++) {
    int j = out_col[i];
    if (j < 0) continue;
    pg_column *c = cols[j];
    if (len[i] == 1 && start[i][0] == '-') {
      pg_append_null(c);
      continue;
    }
    if (columns[i].kind == TEXT) {
      pg_append_bytes(c, start[i], len[i]);
      continue;
    }
    int64_t v;
    if (pg_parse_i64(start[i], len[i], &v) ||
        (columns[i].kind == I32 && (v < -2147483648LL || v > 2147483647LL)))
      return pg_error_text("not a number: ", start[i], len[i]);
    if (columns[i].kind == EPOCH_SECONDS) v *= 1000000;
    pg_append_int(c, v);
  }
  return 0;
}
