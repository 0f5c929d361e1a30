/* The C example decoder compiled natively: decodes the benchmark batch
 * (1000 lines, as BenchmarkVpcflow* build it) for about SECONDS seconds
 * through the same ABI entry points the .wasm exports, and prints MB/s
 * (wall clock, then this thread's CPU time). A second argument sets the
 * lines per batch (1000 by default).
 * Built with the .wasm build's compiler and flags:
 *   bash wasm-decoders/build-c.sh --native bench \
 *       wasm-decoders/examples/vpcflow-c/{vpcflow.c,bench_native.c} && ./bench 3 [LINES] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pgdecoder.h"

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
/* This thread's CPU time: on a shared machine, wall time mostly measures
 * the other work (go/internal/decode's benchmarks report both too). */
static double cpu_now(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3;
  int N = argc > 2 ? atoi(argv[2]) : 1000;
  if (N < 1) return fprintf(stderr, "lines per batch must be at least 1\n"), 1;
  char (*lines)[256] = malloc((size_t)N * sizeof *lines);
  uint32_t total = 0;
  for (int i = 0; i < N; i++) {
    snprintf(lines[i], sizeof lines[i], "2 123456789010 eni-%08x 172.31.%d.%d 10.0.%d.%d %d 443 6 %d %d %d %d ACCEPT OK",
             i, i % 256, i % 200, i % 100, i % 250, 20000 + i % 40000, i % 1000, i * 37 % 100000, 1418530010 + i,
             1418530070 + i);
    total += (uint32_t)strlen(lines[i]);
  }
  uint32_t size = 4 + 4 * (N + 1) + total;
  uint8_t *in = malloc(size);
  uint32_t n = N, off = 0;
  memcpy(in, &n, 4);
  uint8_t *data = in + 4 + 4 * (N + 1);
  for (int i = 0; i <= N; i++) {
    memcpy(in + 4 + 4 * i, &off, 4);
    if (i < N) {
      memcpy(data + off, lines[i], strlen(lines[i]));
      off += (uint32_t)strlen(lines[i]);
    }
  }
  uint8_t config[8] = {0}; /* no schema, no options */
  if (pg_init((uintptr_t)config, sizeof config)) return fprintf(stderr, "pg_init failed\n"), 1;
  long iters = 0;
  double start = now(), cpu0 = cpu_now(), el;
  do {
    if (pg_decode((uintptr_t)in, size)) return fprintf(stderr, "pg_decode failed\n"), 1;
    iters++;
  } while ((el = now() - start) < seconds);
  double cpu = cpu_now() - cpu0;
  printf("%.1f MB/s %.1f cpu-MB/s\n", (double)iters * total / el / 1e6, (double)iters * total / cpu / 1e6);
  return 0;
}
