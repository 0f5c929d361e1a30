/* A foreign-architecture smoke test of libpubsubgo that needs no Python:
 * dlopen()s the library, prints pg_version_info, starts the embedded
 * emulator, creates a topic on it through pg_admin and stops it. Built for
 * aarch64 with zig and run under qemu-user by scripts/packaging-check.sh.
 * With a decoder module and wasmtime's C library it also decodes one Avro
 * payload on the wasmtime engine (the library loaded at run time, the
 * module compiled by Cranelift for this machine), and stops a module that
 * loops for ever at its time limit (the memory fence) before decoding the
 * payload again.
 * Usage: capi_probe /path/to/libpubsubgo.so [avro.wasm _libwasmtime.so]
 * (exit 0 when every call worked) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../go/include/pubsubgo.h" /* struct PgError; the functions are looked up with dlsym */

typedef int (*json_fn)(char**, struct PgError*);
typedef int (*emu_start_fn)(char*, uint64_t*, char**, struct PgError*);
typedef int (*emu_stop_fn)(uint64_t, struct PgError*);
typedef int (*admin_fn)(char*, char**, struct PgError*);
typedef void (*free_fn)(char*);
typedef int (*dec_open_fn)(char*, uint64_t*, struct PgError*);
typedef int (*dec_decode_fn)(uint64_t, struct ArrowArray*, struct ArrowSchema*, struct ArrowArray*,
                             struct ArrowSchema*, struct PgError*);
typedef int (*dec_close_fn)(uint64_t, struct PgError*);

static void* sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (!p) fprintf(stderr, "capi_probe: %s not exported: %s\n", name, dlerror());
  return p;
}

static void no_release_array(struct ArrowArray* a) { a->release = NULL; }
static void no_release_schema(struct ArrowSchema* s) { s->release = NULL; }

/* decode_on_wasmtime decodes the Avro long 21 (one payload, zigzag 0x2a)
 * with the module wasm on the wasmtime engine and checks the value. */
static int decode_on_wasmtime(void* h, const char* wasm, const char* wasmtime) {
  dec_open_fn dec_open = (dec_open_fn)sym(h, "pg_decoder_open");
  dec_decode_fn dec_decode = (dec_decode_fn)sym(h, "pg_decoder_decode");
  dec_close_fn dec_close = (dec_close_fn)sym(h, "pg_decoder_close");
  if (!dec_open || !dec_decode || !dec_close) return 1;
  char cfg[4096];
  snprintf(cfg, sizeof cfg,
           "{\"wasm\": \"%s\", \"format\": \"avro\", \"engine\": \"wasmtime\", \"wasmtime_library\": \"%s\", "
           "\"options\": {\"avro_schema\": \"{\\\"type\\\": \\\"record\\\", \\\"name\\\": \\\"R\\\", "
           "\\\"fields\\\": [{\\\"name\\\": \\\"v\\\", \\\"type\\\": \\\"long\\\"}]}\"}}",
           wasm, wasmtime);
  struct PgError err;
  memset(&err, 0, sizeof err);
  uint64_t dec = 0;
  int rc = dec_open(cfg, &dec, &err);
  if (rc != 0) {
    fprintf(stderr, "capi_probe: pg_decoder_open (wasmtime): %d %s %s\n", rc, err.kind, err.message ? err.message : "");
    return 1;
  }
  static const int32_t offsets[2] = {0, 1};
  static const uint8_t payload[1] = {0x2a};
  const void* buffers[3] = {NULL, offsets, payload};
  struct ArrowArray in = {1, 0, 0, 3, 0, buffers, NULL, NULL, no_release_array, NULL};
  struct ArrowSchema in_schema = {"z", "payload", NULL, 2, 0, NULL, NULL, no_release_schema, NULL};
  struct ArrowArray out;
  struct ArrowSchema out_schema;
  rc = dec_decode(dec, &in, &in_schema, &out, &out_schema, &err);
  if (rc != 0) {
    fprintf(stderr, "capi_probe: pg_decoder_decode (wasmtime): %d %s %s\n", rc, err.kind, err.message ? err.message : "");
    return 1;
  }
  /* A struct array: v (int64), then __decode_error (null: the row decoded). */
  int ok = out.length == 1 && out.n_children == 2 && out.children[1]->null_count == 1 &&
           ((const int64_t*)out.children[0]->buffers[1])[out.children[0]->offset] == 21;
  printf("decoded on wasmtime: %s\n", ok ? "v=21" : "WRONG");
  out.release(&out);
  out_schema.release(&out_schema);
  if (dec_close(dec, &err) != 0 || !ok) return 1;
  return 0;
}

/* A decoder module (ABI 1, hand-assembled as abiModule in
 * go/internal/decode/hostile_test.go builds it) whose pg_decode is
 * `loop br 0 end`: it never touches memory, so only the fence page's probe
 * at the loop's top can stop it. */
static const uint8_t loop_module[] = {
    0x00,0x61,0x73,0x6d,0x01,0x00,0x00,0x00,0x01,0x18,0x05,0x60,0x00,0x01,0x7f,0x60,
    0x01,0x7f,0x01,0x7f,0x60,0x01,0x7f,0x00,0x60,0x02,0x7f,0x7f,0x01,0x7f,0x60,0x00,
    0x01,0x7e,0x03,0x08,0x07,0x00,0x01,0x02,0x03,0x03,0x04,0x04,0x05,0x03,0x01,0x00,
    0x01,0x07,0x5d,0x08,0x0e,0x70,0x67,0x5f,0x61,0x62,0x69,0x5f,0x76,0x65,0x72,0x73,
    0x69,0x6f,0x6e,0x00,0x00,0x08,0x70,0x67,0x5f,0x61,0x6c,0x6c,0x6f,0x63,0x00,0x01,
    0x07,0x70,0x67,0x5f,0x66,0x72,0x65,0x65,0x00,0x02,0x07,0x70,0x67,0x5f,0x69,0x6e,
    0x69,0x74,0x00,0x03,0x09,0x70,0x67,0x5f,0x64,0x65,0x63,0x6f,0x64,0x65,0x00,0x04,
    0x09,0x70,0x67,0x5f,0x6f,0x75,0x74,0x70,0x75,0x74,0x00,0x05,0x08,0x70,0x67,0x5f,
    0x65,0x72,0x72,0x6f,0x72,0x00,0x06,0x06,0x6d,0x65,0x6d,0x6f,0x72,0x79,0x02,0x00,
    0x0a,0x28,0x07,0x04,0x00,0x41,0x01,0x0b,0x05,0x00,0x41,0x80,0x08,0x0b,0x02,0x00,
    0x0b,0x04,0x00,0x41,0x00,0x0b,0x09,0x00,0x03,0x40,0x0c,0x00,0x0b,0x41,0x00,0x0b,
    0x04,0x00,0x42,0x00,0x0b,0x04,0x00,0x42,0x00,0x0b,
};

/* stop_loop_on_wasmtime opens a decoder of loop_module with a 500 ms time
 * limit (opening decodes an empty batch, which loops) and expects
 * DEADLINE_EXCEEDED (4) within a few seconds (qemu is slow). */
static int stop_loop_on_wasmtime(void* h, const char* wasmtime) {
  dec_open_fn dec_open = (dec_open_fn)sym(h, "pg_decoder_open");
  if (!dec_open) return 1;
  char path[] = "/tmp/capi_probe_loop_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || write(fd, loop_module, sizeof loop_module) != (ssize_t)sizeof loop_module) return 1;
  close(fd);
  char cfg[4096];
  snprintf(cfg, sizeof cfg,
           "{\"wasm\": \"%s\", \"format\": \"loop\", \"engine\": \"wasmtime\", \"wasmtime_library\": \"%s\", "
           "\"timeout_ms\": 500}",
           path, wasmtime);
  struct PgError err;
  memset(&err, 0, sizeof err);
  uint64_t dec = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = dec_open(cfg, &dec, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  unlink(path);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("endless loop on wasmtime: status %d (%s) after %.2f s\n", rc, err.kind, s);
  return rc == 4 && s < 10 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: %s libpubsubgo.so [avro.wasm _libwasmtime.so]\n", argv[0]);
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "capi_probe: dlopen: %s\n", dlerror());
    return 1;
  }
  json_fn version_info = (json_fn)sym(h, "pg_version_info");
  emu_start_fn emu_start = (emu_start_fn)sym(h, "pg_emulator_start");
  emu_stop_fn emu_stop = (emu_stop_fn)sym(h, "pg_emulator_stop");
  admin_fn admin = (admin_fn)sym(h, "pg_admin");
  free_fn pg_free = (free_fn)sym(h, "pg_free");
  if (!version_info || !emu_start || !emu_stop || !admin || !pg_free) return 1;

  char *out = NULL, *addr = NULL;
  struct PgError err;
  memset(&err, 0, sizeof err);
  int rc = version_info(&out, &err);
  if (rc != 0) {
    fprintf(stderr, "capi_probe: pg_version_info: %d %s %s\n", rc, err.kind, err.message ? err.message : "");
    return 1;
  }
  printf("version_info %s\n", out);
  pg_free(out);

  uint64_t emu = 0;
  rc = emu_start("127.0.0.1:0", &emu, &addr, &err);
  if (rc != 0) {
    fprintf(stderr, "capi_probe: pg_emulator_start: %d %s %s\n", rc, err.kind, err.message ? err.message : "");
    return 1;
  }
  char req[512];
  snprintf(req, sizeof req,
           "{\"op\": \"create_topic\", \"emulator_host\": \"%s\", \"topic\": \"projects/probe/topics/t\"}", addr);
  rc = admin(req, &out, &err);
  if (rc != 0) {
    fprintf(stderr, "capi_probe: pg_admin create_topic: %d %s %s\n", rc, err.kind, err.message ? err.message : "");
    return 1;
  }
  printf("emulator %s create_topic %s\n", addr, out);
  pg_free(out);
  pg_free(addr);
  rc = emu_stop(emu, &err);
  if (rc != 0) {
    fprintf(stderr, "capi_probe: pg_emulator_stop: %d %s %s\n", rc, err.kind, err.message ? err.message : "");
    return 1;
  }
  if (argc == 4 && (decode_on_wasmtime(h, argv[2], argv[3]) != 0 || stop_loop_on_wasmtime(h, argv[3]) != 0 ||
                    decode_on_wasmtime(h, argv[2], argv[3]) != 0))
    return 1;
  printf("capi_probe: ok\n");
  return 0;
}
