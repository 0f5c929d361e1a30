/* pubsub-go decoder SDK for C: decoder ABI version 2 (docs/decoder-abi.md).
 *
 * A decoder implements decoder_init and decoder_decode below and is built,
 * together with pgdecoder.c, to a freestanding wasm32 module (no libc, no
 * WASI: nothing to sandbox away, and nothing that costs at run time):
 *
 *   python -m ziglang cc -target wasm32-freestanding -O2 -mbulk-memory \
 *       -nostdlib -Wl,--no-entry -Wl,--export-dynamic \
 *       -I sdk-c sdk-c/pgdecoder.c my_decoder.c -o my_decoder.wasm
 *
 * (bash wasm-decoders/build-c.sh does this.) The same files compile
 * natively (gcc, clang) for unit tests and benchmarks.
 *
 * Columns are flat: bool, int8..int64 (signed or not), float32/64, utf8,
 * binary, date32, timestamp (any unit and zone). Nested types are the Go
 * SDK's (wasm-decoders/sdk). */
#ifndef PGDECODER_H
#define PGDECODER_H

#include <stddef.h>
#include <stdint.h>

/* Type ids, numbered as in Arrow's Schema.fbs (and arrowlite). */
enum {
  PG_NULL = 1, PG_INT = 2, PG_FLOAT = 3, PG_BINARY = 4, PG_UTF8 = 5, PG_BOOL = 6,
  PG_DATE = 8, PG_TIMESTAMP = 10
};
/* Timestamp units. */
enum { PG_SECOND = 0, PG_MILLI = 1, PG_MICRO = 2, PG_NANO = 3 };

typedef struct {
  const char *name;     /* UTF-8, not NUL-terminated: use name_len */
  uint32_t name_len;
  uint8_t type;         /* PG_* */
  uint8_t nullable;
  int32_t p1;           /* INT: bit width; FLOAT: 1 = float32, 2 = float64; DATE: 0 = days; TIMESTAMP: unit */
  int32_t p2;           /* INT: 1 = signed */
  const char *tz;       /* TIMESTAMP: time zone ("" = none) */
  uint32_t tz_len;
} pg_field;

typedef struct {
  uint32_t n;
  pg_field *fields;
} pg_schema;

typedef struct {
  uint32_t n;
  const char **keys, **values; /* NUL-terminated */
} pg_options;

/* One output column. Append at most one value per row; a column left
 * untouched in a row becomes null. */
typedef struct pg_column pg_column;

void pg_append_null(pg_column *c);
void pg_append_bool(pg_column *c, int v);
void pg_append_int(pg_column *c, int64_t v);  /* INT, DATE, TIMESTAMP (truncated to the width) */
void pg_append_float(pg_column *c, double v);
void pg_append_bytes(pg_column *c, const uint8_t *p, uint32_t n); /* UTF8 (caller checks UTF-8), BINARY */

/* Implemented by the decoder. decoder_init gets the host's target schema
 * (NULL when it gave none) and the options, and sets *out to the schema it
 * will produce (normally target; static storage otherwise). Return 0, or
 * a message (static storage) to reject the config. */
const char *decoder_init(const pg_schema *target, const pg_options *opts, const pg_schema **out);
/* Decodes one payload: append to cols (in schema order). Return NULL, or
 * a message for this row (the row becomes null in every column). */
const char *decoder_decode(const uint8_t *payload, uint32_t len, pg_column **cols);

/* A per-row message with details, formatted into a buffer the SDK owns
 * (valid until the next call): return pg_errorf("bad port %s", ...) is
 * not available without libc; use pg_error_text to build one. */
const char *pg_error_text(const char *prefix, const uint8_t *detail, uint32_t detail_len);

/* Small helpers without libc. */
int pg_parse_i64(const uint8_t *p, uint32_t n, int64_t *out); /* decimal integer; 0 on success */
int pg_equal(const char *a, uint32_t an, const char *b);       /* a[0:an] == NUL-terminated b */

void *pg_malloc(size_t n);
void *pg_realloc(void *p, size_t n);
void pg_mfree(void *p);

/* The ABI exports (also callable natively, e.g. from a benchmark). */
int32_t pg_abi_version(void);
uintptr_t pg_alloc(uint32_t n);
void pg_free(uintptr_t p);
int32_t pg_init(uintptr_t ptr, uint32_t len);
int32_t pg_decode(uintptr_t ptr, uint32_t len);
uint64_t pg_output(void);
uint64_t pg_error(void);
uint64_t pg_schema_export(void); /* exported as pg_schema */

#endif
