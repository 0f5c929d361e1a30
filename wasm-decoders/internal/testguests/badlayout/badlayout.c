/* A decoder ABI 2 module whose output layouts are broken, for the hosts'
 * tests (built without the SDK: build-c.sh --no-sdk). Schema: one nullable
 * utf8 column "v". Every batch must have 2 payloads; the first byte of the
 * first picks the output: 'g' good, 'o' a buffer outside memory, 'b'
 * offsets past the data, 'n' too few nodes, 'r' a wrong row count, 'x' an
 * extra buffer, 'c' a validity bitmap with a null the null count leaves
 * out. */
#include <stdint.h>

#define EXPORT(name) __attribute__((export_name(name)))

static uint8_t heap[1 << 16];
static uint32_t out[32];
static uint32_t out_len;
static uint8_t data[4] = {'a', 'b', 'c', 'd'};
static int32_t offs_v[3], offs_e[3];
static uint8_t valid_e[1], valid_v[1] = {0x02}; /* row 0 null */
static const uint8_t schema[] = {1, 0, 0, 0, 1, 0, 0, 0, 'v', 5, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                                 0, 0, 0, 0, 0, 0, 0, 0};

EXPORT("pg_abi_version") int32_t abi_version(void) { return 2; }
EXPORT("pg_alloc") uint32_t alloc(uint32_t n) { return n <= sizeof heap ? (uint32_t)(uintptr_t)heap : 0; }
EXPORT("pg_free") void free_(uint32_t p) { (void)p; }
EXPORT("pg_init") int32_t init(uint32_t p, uint32_t n) { (void)p, (void)n; return 0; }
EXPORT("pg_error") uint64_t error(void) { return 0; }
EXPORT("pg_schema") uint64_t schema_(void) { return ((uint64_t)(uintptr_t)schema << 32) | sizeof schema; }
EXPORT("pg_output") uint64_t output(void) { return ((uint64_t)(uintptr_t)out << 32) | (out_len * 4); }

static void put(uint32_t v) { out[out_len++] = v; }

EXPORT("pg_decode") int32_t decode(uint32_t p, uint32_t n) {
  const uint8_t *in = (const uint8_t *)(uintptr_t)p;
  uint32_t count = *(const uint32_t *)in;
  uint8_t fault = (count > 0 && n > 4 + 4 * (count + 1)) ? in[4 + 4 * (count + 1)] : 'g';
  offs_v[0] = 0, offs_v[1] = fault == 'b' ? 9 : 2, offs_v[2] = 4;
  out_len = 0;
  put(fault == 'r' ? 3 : count);
  put(fault == 'n' ? 1 : 2);
  put(count), put(0);     /* v */
  if (fault != 'n') put(count), put(count); /* __error: all null */
  put(fault == 'x' ? 7 : fault == 'n' ? 3 : 6);
  if (fault == 'c') put((uint32_t)(uintptr_t)valid_v), put(1); /* v: validity, offsets, data */
  else put(0), put(0);
  put(fault == 'o' ? 0xFFFFFF00u : (uint32_t)(uintptr_t)offs_v), put(4 * (count + 1));
  put((uint32_t)(uintptr_t)data), put(count == 2 ? 4 : 0);
  if (fault != 'n') {
    put((uint32_t)(uintptr_t)valid_e), put(1);
    put((uint32_t)(uintptr_t)offs_e), put(4 * (count + 1));
    put((uint32_t)(uintptr_t)data), put(0);
  }
  if (fault == 'x') put((uint32_t)(uintptr_t)data), put(0);
  return 0;
}
