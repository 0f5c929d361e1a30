/* A foreign-architecture smoke test of libpubsubgo that needs no Python:
 * dlopen()s the library, prints pg_version_info, starts the embedded
 * emulator, creates a topic on it through pg_admin and stops it. Built for
 * aarch64 with zig and run under qemu-user by scripts/packaging-check.sh.
 * Usage: capi_probe /path/to/libpubsubgo.so   (exit 0 when every call worked) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../go/include/pubsubgo.h" /* struct PgError; the functions are looked up with dlsym */

typedef int (*json_fn)(char**, struct PgError*);
typedef int (*emu_start_fn)(char*, uint64_t*, char**, struct PgError*);
typedef int (*emu_stop_fn)(uint64_t, struct PgError*);
typedef int (*admin_fn)(char*, char**, struct PgError*);
typedef void (*free_fn)(char*);

static void* sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (!p) fprintf(stderr, "capi_probe: %s not exported: %s\n", name, dlerror());
  return p;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s libpubsubgo.so\n", argv[0]);
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
  printf("capi_probe: ok\n");
  return 0;
}
