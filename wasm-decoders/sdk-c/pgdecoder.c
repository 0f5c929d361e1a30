/* pubsub-go decoder SDK for C: the ABI v2 exports, memory, framing,
 * per-row errors and the output layout (docs/decoder-abi.md). */
#include "pgdecoder.h"

#ifdef __wasm__
#define EXPORT(name) __attribute__((export_name(name)))
/* Freestanding: the few libc functions the compiler may call. With
 * -mbulk-memory these compile to memory.copy / memory.fill. */
void *memcpy(void *d, const void *s, size_t n) { __builtin_memcpy(d, s, n); return d; }
void *memmove(void *d, const void *s, size_t n) { __builtin_memmove(d, s, n); return d; }
void *memset(void *d, int c, size_t n) { __builtin_memset(d, c, n); return d; }

/* A first-fit free list over memory.grow: blocks carry their size. */
typedef struct blk { size_t size; struct blk *next; } blk;
static blk *free_list;
extern unsigned char __heap_base;
static uintptr_t heap_top;

void *pg_malloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  for (blk **pp = &free_list; *pp; pp = &(*pp)->next) {
    if ((*pp)->size >= n) {
      blk *b = *pp;
      *pp = b->next;
      return (char *)b + 16;
    }
  }
  if (!heap_top) heap_top = ((uintptr_t)&__heap_base + 15) & ~(uintptr_t)15;
  uintptr_t need = heap_top + 16 + n;
  uintptr_t have = __builtin_wasm_memory_size(0) * 65536;
  if (need > have) {
    if (__builtin_wasm_memory_grow(0, (need - have + 65535) / 65536) == (size_t)-1) return 0;
  }
  blk *b = (blk *)heap_top;
  b->size = n;
  heap_top = need;
  return (char *)b + 16;
}

void pg_mfree(void *p) {
  if (!p) return;
  blk *b = (blk *)((char *)p - 16);
  b->next = free_list;
  free_list = b;
}

void *pg_realloc(void *p, size_t n) {
  if (p && ((blk *)((char *)p - 16))->size >= n) return p;
  void *q = pg_malloc(n);
  if (q && p) {
    memcpy(q, p, ((blk *)((char *)p - 16))->size);
    pg_mfree(p);
  }
  return q;
}
#else
#include <stdlib.h>
#include <string.h>
#define EXPORT(name)
void *pg_malloc(size_t n) { return malloc(n); }
void *pg_realloc(void *p, size_t n) { return realloc(p, n); }
void pg_mfree(void *p) { free(p); }
#endif

#define ABI_VERSION 2

typedef struct { uint8_t *p; uint32_t len, cap; } buf;

/* ensure gives b room for cap bytes in all (keeping its contents). Out of
 * line: the append paths below only test whether they need it. */
static __attribute__((noinline)) void ensure(buf *b, uint64_t need) {
  if (need <= b->cap) return;
  uint64_t cap = b->cap ? (uint64_t)b->cap * 2 : 256;
  while (cap < need) cap *= 2;
  if (cap > 0xffffffffu) __builtin_trap();
  uint8_t *p = pg_realloc(b->p, (size_t)cap);
  if (!p) __builtin_trap(); /* out of memory: the host reports the memory cap */
  b->p = p;
  b->cap = (uint32_t)cap;
}

static inline void grow(buf *b, uint32_t more) {
  if (__builtin_expect((uint64_t)b->len + more > b->cap, 0)) ensure(b, (uint64_t)b->len + more);
}

/* copy_bytes copies n bytes with fixed-size (inlined) moves: in wazero a
 * variable-size memcpy (memory.copy) is a call out of the guest, which
 * costs more than a short value takes to copy. */
static inline void copy_bytes(uint8_t *d, const uint8_t *s, uint32_t n) {
  if (n >= 8) {
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) __builtin_memcpy(d + i, s + i, 8);
    if (i < n) __builtin_memcpy(d + n - 8, s + n - 8, 8); /* overlapping tail */
  } else if (n >= 4) {
    __builtin_memcpy(d, s, 4);
    __builtin_memcpy(d + n - 4, s + n - 4, 4);
  } else {
    for (uint32_t i = 0; i < n; i++) d[i] = s[i];
  }
}

static void put(buf *b, const void *p, uint32_t n) {
  grow(b, n);
  if (n <= 256) copy_bytes(b->p + b->len, p, n);
  else memcpy(b->p + b->len, p, n);
  b->len += n;
}

static void put_u32(buf *b, uint32_t v) {
  grow(b, 4);
  __builtin_memcpy(b->p + b->len, &v, 4);
  b->len += 4;
} /* wasm and x86 are little-endian */

/* Columns are written by row index, not appended to: each keeps room for
 * the whole batch (reserved before its first row) and the row being
 * decoded is the global `cur`. During a batch a column records one state
 * byte per row (0 untouched, 1 value, 2 null) and keeps fixed-width and
 * bool values in slots zeroed beforehand; validity and bool bitmaps are
 * packed and variable-size offsets completed when the batch ends. An
 * append is then a few stores with no test of room or length, and a row
 * that succeeds needs no work per column: in wazero every load and store
 * into linear memory is bounds-checked and struct fields cannot stay in
 * registers across byte stores (which may alias them), so fewer memory
 * touches per value is what makes the SDK fast there (measured in
 * bench/results/decode_results.md). */
struct pg_column {
  uint8_t type, width; /* width in bytes of fixed-width values (bool: 1) */
  uint32_t len, nulls, rows_cap;
  uint32_t filled; /* variable-size: offsets written for rows [0, filled) */
  buf state, valid, data, offs, bits; /* bits: a bool column's packed values */
};

static uint32_t cur; /* the row being decoded */
static uint8_t dup;  /* nonzero: the row gave some column two values */

static __attribute__((noinline)) void more_rows(pg_column *c, uint64_t rows) {
  if (rows < 64) rows = 64;
  rows = (rows + 7) & ~(uint64_t)7; /* packing reads the state 8 rows at a time */
  ensure(&c->state, rows);
  ensure(&c->valid, rows / 8);
  switch (c->type) {
  case PG_NULL: break;
  case PG_BOOL: ensure(&c->data, rows); ensure(&c->bits, rows / 8); break;
  case PG_UTF8: case PG_BINARY: ensure(&c->offs, 4 * (rows + 1)); break;
  default: ensure(&c->data, rows * c->width);
  }
  c->rows_cap = (uint32_t)rows;
}

static inline uint8_t *slot(pg_column *c, uint8_t st) {
  uint32_t i = cur;
  uint8_t *s = c->state.p + i;
  dup |= *s;
  *s = st;
  return c->data.p + i * c->width;
}

void pg_append_null(pg_column *c) { slot(c, 2); }

void pg_append_bool(pg_column *c, int v) { *slot(c, 1) = v != 0; }

void pg_append_int(pg_column *c, int64_t v) {
  uint8_t *d = slot(c, 1);
  switch (c->width) { /* little-endian: the low bytes */
  case 1: *d = (uint8_t)v; break;
  case 2: { int16_t x = (int16_t)v; __builtin_memcpy(d, &x, 2); break; }
  case 4: { int32_t x = (int32_t)v; __builtin_memcpy(d, &x, 4); break; }
  default: __builtin_memcpy(d, &v, 8);
  }
}

void pg_append_float(pg_column *c, double v) {
  uint8_t *d = slot(c, 1);
  if (c->width == 4) {
    float f = (float)v;
    __builtin_memcpy(d, &f, 4);
  } else {
    __builtin_memcpy(d, &v, 8);
  }
}

/* fill_offsets sets the start of rows [filled, upto] to the bytes used so
 * far (rows skipped since the last value are empty). */
static inline void fill_offsets(pg_column *c, uint32_t upto) {
  uint32_t end = c->data.len, f = c->filled;
  uint8_t *o = c->offs.p;
  for (; f <= upto; f++) __builtin_memcpy(o + 4 * f, &end, 4);
  c->filled = f;
}

void pg_append_bytes(pg_column *c, const uint8_t *p, uint32_t n) {
  uint32_t i = cur;
  uint8_t *s = c->state.p + i;
  dup |= *s;
  *s = 1;
  fill_offsets(c, i);
  grow(&c->data, n);
  if (n <= 256) copy_bytes(c->data.p + c->data.len, p, n);
  else memcpy(c->data.p + c->data.len, p, n);
  c->data.len += n;
}

/* reset empties c and gives it room for rows rows, all untouched. */
static void reset(pg_column *c, uint32_t rows) {
  c->len = c->nulls = c->filled = 0;
  c->data.len = 0;
  if (rows > c->rows_cap || !c->rows_cap) more_rows(c, rows);
  uint32_t r8 = (rows + 7) & ~7u;
  memset(c->state.p, 0, r8);
  if (c->type == PG_BOOL) memset(c->data.p, 0, r8);
  else if (c->width) memset(c->data.p, 0, (size_t)rows * c->width);
}

/* drop_row makes row i of c (the current one) untouched again. */
static void drop_row(pg_column *c, uint32_t i) {
  c->state.p[i] = 0;
  if (c->type == PG_UTF8 || c->type == PG_BINARY) {
    if (c->filled > i) { /* the row wrote bytes: give them back */
      __builtin_memcpy(&c->data.len, c->offs.p + 4 * i, 4);
      c->filled = i;
    }
  } else if (c->width) {
    memset(c->data.p + i * c->width, 0, c->width);
  }
}

/* pack8 maps 8 bytes that are each 0 or 1 to 8 bits (byte k to bit k). */
static inline uint8_t pack8(uint64_t x) { return (uint8_t)((x * 0x0102040810204080ull) >> 56); }

#define ONES 0x0101010101010101ull

/* finish ends c's batch of rows rows: offsets completed, state packed into
 * the validity bitmap (and a bool column's values into bits). */
static void finish(pg_column *c, uint32_t rows) {
  c->len = rows;
  if (c->type == PG_UTF8 || c->type == PG_BINARY) fill_offsets(c, rows);
  uint32_t set = 0;
  for (uint32_t i = 0; i < rows; i += 8) {
    uint64_t x, v;
    __builtin_memcpy(&x, c->state.p + i, 8); /* rows past the end are 0 */
    x = x & ~(x >> 1) & ONES; /* state 1: a value */
    uint8_t b = pack8(x);
    c->valid.p[i / 8] = b;
    set += (uint32_t)__builtin_popcount(b);
    if (c->type == PG_BOOL) {
      __builtin_memcpy(&v, c->data.p + i, 8);
      c->bits.p[i / 8] = pack8(v & x);
    }
  }
  c->nulls = rows - set;
}

/* The byte sizes of c's buffers as the output layout gives them. */
static uint32_t valid_bytes(const pg_column *c) { return (c->len + 7) / 8; }
static uint32_t data_bytes(const pg_column *c) {
  switch (c->type) {
  case PG_BOOL: return (c->len + 7) / 8;
  case PG_UTF8: case PG_BINARY: return c->data.len;
  default: return c->len * c->width;
  }
}

static int width_of(const pg_field *f) {
  switch (f->type) {
  case PG_INT: return f->p1 / 8;
  case PG_FLOAT: return f->p1 == 1 ? 4 : 8;
  case PG_DATE: return f->p1 == 0 ? 4 : 8;
  case PG_TIMESTAMP: return 8;
  case PG_BOOL: return 1;
  }
  return 0;
}

/* ---- state ---- */

static pg_schema target, *schema;
static pg_options options;
static pg_column *cols, errs;
static pg_column **colp;
static buf out, schema_out, err_text, row_err;
static uint8_t *config_copy;

static const char *set_error(const char *msg) {
  err_text.len = 0;
  uint32_t n = 0;
  while (msg[n]) n++;
  put(&err_text, msg, n);
  return msg;
}

const char *pg_error_text(const char *prefix, const uint8_t *detail, uint32_t detail_len) {
  row_err.len = 0;
  uint32_t n = 0;
  while (prefix[n]) n++;
  put(&row_err, prefix, n);
  put(&row_err, detail, detail_len > 200 ? 200 : detail_len);
  put(&row_err, "", 1);
  return (const char *)row_err.p;
}

int pg_parse_i64(const uint8_t *p, uint32_t n, int64_t *out_v) {
  /* As Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits,
   * range checked. */
  uint32_t i = 0;
  int neg = 0;
  if (n && (p[0] == '+' || p[0] == '-')) {
    neg = p[0] == '-';
    i = 1;
  }
  if (i == n) return 1;
  /* v * 10 + d <= limit, checked without a division per digit: wasm32
   * has no 64-bit multiply-high, so a 64-bit division by a constant stays
   * an i64.div_u there (natively it becomes a multiply). */
  const uint64_t cut = 922337203685477580u; /* limit / 10 for both signs */
  uint64_t v = 0, last = neg ? 8 : 7;       /* limit % 10 */
  for (; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return 1;
    uint64_t d = (uint64_t)(p[i] - '0');
    if (v > cut || (v == cut && d > last)) return 1;
    v = v * 10 + d;
  }
  *out_v = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

int pg_equal(const char *a, uint32_t an, const char *b) {
  uint32_t i = 0;
  for (; i < an; i++)
    if (b[i] != a[i] || !b[i]) return 0;
  return b[an] == 0;
}

/* ---- framing ---- */

typedef struct { const uint8_t *p; uint32_t n, i; int bad; } rd;

static uint32_t rd_u32(rd *r) {
  if (r->i + 4 > r->n) { r->bad = 1; return 0; }
  uint32_t v;
  memcpy(&v, r->p + r->i, 4);
  r->i += 4;
  return v;
}

static const uint8_t *rd_bytes(rd *r, uint32_t n) {
  if (n > r->n - r->i) { r->bad = 1; return 0; }
  const uint8_t *p = r->p + r->i;
  r->i += n;
  return p;
}

/* The v2 config's schema: u32 n, then per field u32 name_len, name, u8
 * type, u8 nullable, i32 p1, i32 p2, u32 tz_len, tz, u32 children. */
static const char *read_schema(rd *r, pg_schema *s) {
  s->n = rd_u32(r);
  if (r->bad || s->n > 4096) return "malformed schema";
  s->fields = pg_malloc(sizeof(pg_field) * (s->n ? s->n : 1));
  for (uint32_t i = 0; i < s->n; i++) {
    pg_field *f = &s->fields[i];
    f->name_len = rd_u32(r);
    f->name = (const char *)rd_bytes(r, f->name_len);
    const uint8_t *tn = rd_bytes(r, 2);
    if (r->bad) return "malformed schema";
    f->type = tn[0];
    f->nullable = tn[1];
    f->p1 = (int32_t)rd_u32(r);
    f->p2 = (int32_t)rd_u32(r);
    f->tz_len = rd_u32(r);
    f->tz = (const char *)rd_bytes(r, f->tz_len);
    uint32_t children = rd_u32(r);
    if (r->bad) return "malformed schema";
    if (children) return "this decoder (C SDK) supports flat columns only; nested types need the Go SDK";
  }
  return 0;
}

static void write_schema(buf *b, const pg_schema *s) {
  put_u32(b, s->n);
  for (uint32_t i = 0; i < s->n; i++) {
    const pg_field *f = &s->fields[i];
    put_u32(b, f->name_len);
    put(b, f->name, f->name_len);
    uint8_t tn[2] = {f->type, f->nullable};
    put(b, tn, 2);
    put_u32(b, (uint32_t)f->p1);
    put_u32(b, (uint32_t)f->p2);
    put_u32(b, f->tz_len);
    put(b, f->tz, f->tz_len);
    put_u32(b, 0);
  }
}

static void init_column(pg_column *c, uint8_t type, uint8_t width) {
  c->type = type;
  c->width = width;
  reset(c, 0);
}

/* ---- exports ---- */

static uint64_t pack(const buf *b) { return b->len ? ((uint64_t)(uintptr_t)b->p << 32) | b->len : 0; }

EXPORT("pg_abi_version") int32_t pg_abi_version(void) { return ABI_VERSION; }
EXPORT("pg_alloc") uintptr_t pg_alloc(uint32_t n) { return (uintptr_t)pg_malloc(n ? n : 1); }
EXPORT("pg_free") void pg_free(uintptr_t p) { pg_mfree((void *)(uintptr_t)p); }
EXPORT("pg_error") uint64_t pg_error(void) { return pack(&err_text); }
EXPORT("pg_output") uint64_t pg_output(void) { return pack(&out); }
EXPORT("pg_schema") uint64_t pg_schema_export(void) { return pack(&schema_out); }

EXPORT("pg_init") int32_t pg_init(uintptr_t ptr, uint32_t len) {
  /* Keep the config: schema names and options point into it. */
  config_copy = pg_malloc(len ? len : 1);
  memcpy(config_copy, (const void *)(uintptr_t)ptr, len);
  rd r = {config_copy, len, 0, 0};
  uint32_t slen = rd_u32(&r);
  const uint8_t *sp = rd_bytes(&r, slen);
  if (r.bad) return set_error("malformed pg_init config") != 0;
  pg_schema *given = 0;
  if (slen) {
    rd sr = {sp, slen, 0, 0};
    const char *e = read_schema(&sr, &target);
    if (e) return set_error(e) != 0;
    given = &target;
  }
  options.n = rd_u32(&r);
  if (r.bad || options.n > 1024) return set_error("malformed pg_init options") != 0;
  options.keys = pg_malloc(sizeof(char *) * (options.n + 1));
  options.values = pg_malloc(sizeof(char *) * (options.n + 1));
  for (uint32_t i = 0; i < options.n; i++) {
    for (int kv = 0; kv < 2; kv++) {
      uint32_t n = rd_u32(&r);
      const uint8_t *p = rd_bytes(&r, n);
      if (r.bad) return set_error("malformed pg_init options") != 0;
      char *s = pg_malloc(n + 1);
      memcpy(s, p, n);
      s[n] = 0;
      (kv ? options.values : options.keys)[i] = s;
    }
  }
  const pg_schema *produced = 0;
  const char *e = decoder_init(given, &options, &produced);
  if (e) return set_error(e) != 0;
  if (!produced) return set_error("decoder_init gave no schema") != 0;
  schema = (pg_schema *)produced;
  cols = pg_malloc(sizeof(pg_column) * (schema->n ? schema->n : 1));
  colp = pg_malloc(sizeof(pg_column *) * (schema->n ? schema->n : 1));
  memset(cols, 0, sizeof(pg_column) * (schema->n ? schema->n : 1));
  for (uint32_t i = 0; i < schema->n; i++) {
    const pg_field *f = &schema->fields[i];
    switch (f->type) {
    case PG_NULL: case PG_BOOL: case PG_UTF8: case PG_BINARY: case PG_INT: case PG_FLOAT: case PG_DATE: case PG_TIMESTAMP: break;
    default: return set_error("unsupported column type (C SDK: flat columns)") != 0;
    }
    init_column(&cols[i], f->type, (uint8_t)width_of(f));
    colp[i] = &cols[i];
  }
  init_column(&errs, PG_UTF8, 0);
  schema_out.len = 0;
  write_schema(&schema_out, schema);
  return 0;
}

static void column_layout(buf *nodes, buf *bufs, uint32_t *nn, uint32_t *nb, pg_column *c) {
  put_u32(nodes, c->len);
  put_u32(nodes, c->nulls);
  (*nn)++;
  if (c->type == PG_NULL) return;
  put_u32(bufs, (uint32_t)(uintptr_t)c->valid.p);
  put_u32(bufs, c->nulls ? valid_bytes(c) : 0);
  (*nb)++;
  if (c->type == PG_UTF8 || c->type == PG_BINARY) {
    put_u32(bufs, (uint32_t)(uintptr_t)c->offs.p);
    put_u32(bufs, 4 * (c->len + 1));
    (*nb)++;
  }
  put_u32(bufs, (uint32_t)(uintptr_t)(c->type == PG_BOOL ? c->bits.p : c->data.p));
  put_u32(bufs, data_bytes(c));
  (*nb)++;
}

static buf nodes, bufs;

EXPORT("pg_decode") int32_t pg_decode(uintptr_t ptr, uint32_t len) {
  if (!schema) return set_error("pg_decode before a successful pg_init") != 0;
  const uint8_t *in = (const uint8_t *)(uintptr_t)ptr;
  rd r = {in, len, 0, 0};
  uint32_t n = rd_u32(&r);
  const uint8_t *offs = rd_bytes(&r, 4 * (n + 1));
  if (r.bad) return set_error("pg_decode input: offsets do not fit") != 0;
  const uint8_t *data = in + r.i;
  uint32_t dlen = len - r.i, prev = 0;
  for (uint32_t i = 0; i <= n; i++) {
    uint32_t o;
    memcpy(&o, offs + 4 * i, 4);
    if (o < prev || (i == 0 && o != 0) || o > dlen) return set_error("pg_decode input: bad offsets") != 0;
    prev = o;
  }
  if (prev != dlen) return set_error("pg_decode input: offsets do not cover the data") != 0;
  for (uint32_t j = 0; j < schema->n; j++) reset(&cols[j], n);
  reset(&errs, n);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t lo, hi;
    memcpy(&lo, offs + 4 * i, 4);
    memcpy(&hi, offs + 4 * i + 4, 4);
    cur = i;
    dup = 0;
    const char *e = decoder_decode(data + lo, hi - lo, colp);
    if (__builtin_expect(!e && !dup, 1)) continue; /* untouched columns are null already */
    if (!e) e = "decoder appended more than one value to a column";
    for (uint32_t j = 0; j < schema->n; j++) drop_row(&cols[j], i);
    uint32_t elen = 0;
    while (e[elen]) elen++;
    pg_append_bytes(&errs, (const uint8_t *)(elen ? e : "decode error"), elen ? elen : 12);
  }
  for (uint32_t j = 0; j < schema->n; j++) finish(&cols[j], n);
  finish(&errs, n);
  /* u32 rows, u32 node count, nodes, u32 buffer count, buffers */
  uint32_t nn = 0, nb = 0;
  nodes.len = bufs.len = 0;
  for (uint32_t j = 0; j < schema->n; j++) column_layout(&nodes, &bufs, &nn, &nb, &cols[j]);
  column_layout(&nodes, &bufs, &nn, &nb, &errs);
  out.len = 0;
  put_u32(&out, n);
  put_u32(&out, nn);
  put(&out, nodes.p, nodes.len);
  put_u32(&out, nb);
  put(&out, bufs.p, bufs.len);
  return 0;
}
