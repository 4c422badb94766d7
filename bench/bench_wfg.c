/* bench_wfg.c - the coordinator's deadlock analysis alone
 * (xrank/xrank_wfg.c): what one evaluation of the wait-for graph costs
 * with many operations in flight. The coordinator evaluates it on every
 * tick (10 per second) once it holds progress reports, and a report lists
 * up to 2,048 incomplete launch units per process.
 *
 * The states are those of a healthy job whose host threads wait for queued
 * work (no deadlock: every counterpart posted, the analysis must find that
 * every unit can complete):
 *   ranks: NPROC processes, one rank each of one communicator, UNITS
 *     grouped all-to-alls in flight per process (per peer one send and
 *     one receive), each process's host thread blocked for 30 s in
 *     cudaStreamSynchronize on its stream - a training step whose host is
 *     waiting for the GPU;
 *   devices: one process holding all NPROC ranks of one communicator (one
 *     stream each, nccl-tests -g NPROC), UNITS all-to-alls per rank, its
 *     host thread in a cudaStreamQuery polling loop for 30 s.
 *
 * Usage: bench_wfg ranks|devices NPROC UNITS REPS - prints one JSON line
 * (the shape, units in all, seconds per evaluation); exit status 1 if an
 * evaluation reported a deadlock. bench/run counts the instructions of
 * analyze_loop (callgrind) per evaluation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xrank_wfg.h"

enum { F32 = 7 };
static const uint64_t COMM = 0xc0ffee;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct proc {
  xr_commstate *comms;
  xr_unitstate *units;
  xr_peerent *peers;
  xr_threadstate thread;
} proc;

/* One process holding ranks [r0, r0 + nr) of an n-rank communicator, with
 * `units` all-to-alls in flight per rank (posted round-robin over its
 * ranks, rank r on stream 0x5000 + r), `done` all-to-alls completed
 * before them. */
static void build(xr_procstate *st, proc *p, int pid, int r0, int nr, int n, uint32_t units,
                  uint32_t done) {
  size_t nu = (size_t)nr * units, np = (size_t)nr * n + nu * (size_t)n;
  p->comms = calloc((size_t)nr, sizeof *p->comms);
  p->units = calloc(nu, sizeof *p->units);
  p->peers = calloc(np, sizeof *p->peers);
  if (!p->comms || !p->units || !p->peers) exit(2);
  memset(st, 0, sizeof *st);
  st->alive = 1;
  st->pid = pid;
  st->grank = r0;
  snprintf(st->host, sizeof st->host, "h%d", pid);
  st->comms = p->comms;
  st->units = p->units;
  st->peers = p->peers;
  xr_peerent *pe = p->peers;
  for (int k = 0; k < nr; k++) {
    p->comms[k] = (xr_commstate){.comm = COMM, .rank = r0 + k, .nranks = n,
                                 .peer_off = (uint32_t)(pe - p->peers), .npeers = (uint32_t)n,
                                 .last_kind = XR_OP_COLL, .last_site = 0x100};
    for (int q = 0; q < n; q++)
      *pe++ = (xr_peerent){.peer = q, .send_hi = done + units, .recv_hi = done + units};
  }
  st->ncomms = (uint32_t)nr;
  for (uint32_t i = 0; i < units; i++)
    for (int k = 0; k < nr; k++) {
      xr_unitstate *u = &p->units[st->nunits++];
      *u = (xr_unitstate){.comm = COMM, .stream = 0x5000u + (uint64_t)(r0 + k), .site = 0x100,
                          .count = 256, .group = done + i + 1, .peer_off = (uint32_t)(pe - p->peers),
                          .npeers = (uint32_t)n, .kind = XR_OP_COLL, .coll = A2A_COLL_ALLTOALL,
                          .dtype = F32, .rank = r0 + k};
      for (int q = 0; q < n; q++)
        *pe++ = (xr_peerent){.peer = q, .send_lo = done + i, .send_hi = done + i + 1,
                             .recv_lo = done + i, .recv_hi = done + i + 1};
    }
  st->npeers = (uint32_t)(pe - p->peers);
  p->thread = (xr_threadstate){.stream = 0x5000u + (uint64_t)r0, .site = 0x999,
                               .blocked_ms = 30000, .thread = 1, .wait = XR_WAIT_STREAM,
                               .flags = nr > 1 ? XR_THREAD_POLLING : 0};
  st->threads = &p->thread;
  st->nthreads = 1;
}

__attribute__((noinline)) static int analyze_loop(const xr_procstate *ps, size_t n, int reps) {
  xr_wfg_opts o = {.min_blocked_ms = 1000, .focus = -1};
  int dead = 0;
  for (int i = 0; i < reps; i++) {
    xr_wfg_result res;
    dead |= xr_wfg_analyze(ps, n, &o, &res, NULL, NULL, 0);
  }
  return dead;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s ranks|devices NPROC UNITS REPS\n", argv[0]);
    return 2;
  }
  int devices = strcmp(argv[1], "devices") == 0;
  int n = atoi(argv[2]), units = atoi(argv[3]), reps = atoi(argv[4]);
  if ((!devices && strcmp(argv[1], "ranks") != 0) || n < 2 || n > 1024 || units < 1 ||
      units > 100000 || reps < 1)
    return 2;
  size_t np = devices ? 1 : (size_t)n;
  xr_procstate *ps = calloc(np, sizeof *ps);
  proc *p = calloc(np, sizeof *p);
  if (!ps || !p) return 2;
  for (size_t k = 0; k < np; k++)
    build(&ps[k], &p[k], 100 + (int)k, devices ? 0 : (int)k, devices ? n : 1, n,
          devices ? (uint32_t)units / (uint32_t)n : (uint32_t)units, 7);
  size_t total = 0;
  for (size_t k = 0; k < np; k++) total += ps[k].nunits;
  double t0 = now_s();
  int dead = analyze_loop(ps, np, reps);
  double s = (now_s() - t0) / reps;
  printf("{\"shape\": \"%s\", \"ranks\": %d, \"units\": %zu, \"s_per_eval\": %.6f, \"deadlock\": %d}\n",
         argv[1], n, total, s, dead);
  for (size_t k = 0; k < np; k++) {
    free(p[k].comms);
    free(p[k].units);
    free(p[k].peers);
  }
  free(p);
  free(ps);
  return dead ? 1 : 0;
}
