/* bench_match.c - the coordinator's matcher alone (xrank/xrank_match.c):
 * entries (operation fingerprints) matched per second for one communicator
 * of NRANKS ranks, each rank its own connection, as the coordinator's
 * thread would feed them.
 *
 *   alltoall: STEPS grouped all-to-alls (per rank one send and one receive
 *     per peer: 2 n^2 entries a step), posted round-robin over the ranks the
 *     way interleaved connections deliver them; unequal sizes, all matching;
 *   allreduce: STEPS allreduces (n entries a step).
 *
 * Usage: bench_match alltoall|allreduce NRANKS ENTRIES - runs steps until
 * about ENTRIES entries were posted; prints one JSON line with the entries,
 * seconds and entries/s, the time to register the ranks (setup_s), to ask
 * every rank's pending operations (pending_s) and to free the matcher
 * (free_s), the verdicts and the operations still pending (both 0: a
 * correct stream, fully matched; otherwise exit status 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "a2a_core.h"
#include "a2a_event.h"
#include "xrank_match.h"

static long g_verdicts;
static void on_verdict(void *ctx, int conn, const xr_verdict *v) {
  (void)ctx, (void)conn, (void)v;
  g_verdicts++;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { F32 = 7 };
static const uint64_t COMM = 0xc0ffee;

static xr_op p2p(int rank, int kind, int peer, uint64_t count, uint32_t group) {
  return (xr_op){.comm = COMM, .rank = rank, .kind = (uint16_t)kind, .peer = peer, .count = count,
                 .dtype = F32, .group = group, .site = 88, .coll = -1, .redop = -1, .root = -1};
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s alltoall|allreduce NRANKS ENTRIES\n", argv[0]);
    return 2;
  }
  int a2a = strcmp(argv[1], "alltoall") == 0;
  int n = atoi(argv[2]);
  long want = atol(argv[3]);
  if ((!a2a && strcmp(argv[1], "allreduce") != 0) || n < 2 || n > 4096 || want < 1) return 2;
  xr_match_out out = {.verdict = on_verdict};
  double ts = now_s();
  xr_matcher *m = xr_matcher_new(&out);
  for (int r = 0; r < n; r++) {
    char host[24];
    snprintf(host, sizeof host, "h%d", r / 8);
    xr_matcher_hello(m, r, 1000 + r, r, host);
    xr_commreg reg = {.comm = COMM, .nranks = n, .rank = r, .device = r % 8, .site = 1};
    xr_matcher_register(m, r, &reg);
  }
  double setup = now_s() - ts;
  long per_step = a2a ? 2L * n * n : n;
  long steps = want / per_step > 0 ? want / per_step : 1;
  long entries = 0;
  double t0 = now_s();
  for (long s = 0; s < steps; s++) {
    uint32_t g = (uint32_t)s + 1;
    if (a2a) {
      /* Round-robin over the ranks, peer by peer: every connection's
       * stream advances together, as the coordinator sees them. */
      for (int k = 0; k < n; k++)
        for (int r = 0; r < n; r++) {
          int p = (r + k) % n, q = (r - k + n) % n; /* send to p, receive from q */
          xr_op sop = p2p(r, XR_OP_SEND, p, 64 + (uint64_t)((r * 7 + p * 13) % 11) * 16, g);
          xr_op rop = p2p(r, XR_OP_RECV, q, 64 + (uint64_t)((q * 7 + r * 13) % 11) * 16, g);
          xr_matcher_op(m, r, &sop);
          xr_matcher_op(m, r, &rop);
          entries += 2;
        }
    } else {
      for (int r = 0; r < n; r++) {
        xr_op o = {.comm = COMM, .rank = r, .kind = XR_OP_COLL, .peer = -1, .count = 1024,
                   .dtype = F32, .coll = A2A_COLL_ALLREDUCE, .redop = 0, .root = -1, .site = 50};
        xr_matcher_op(m, r, &o);
        entries++;
      }
    }
  }
  double dt = now_s() - t0;
  /* Every rank's connection (pending is counted per rank as operations
   * are queued and matched: O(nranks) per call); not part of `seconds`. */
  size_t pending = 0;
  double tp = now_s();
  for (int r = 0; r < n; r++) pending += xr_matcher_pending(m, r);
  double pending_s = now_s() - tp;
  double tf = now_s();
  xr_matcher_free(m);
  double teardown = now_s() - tf;
  printf("{\"kind\": \"%s\", \"ranks\": %d, \"entries\": %ld, \"seconds\": %.6f, "
         "\"entries_per_s\": %.0f, \"setup_s\": %.6f, \"pending_s\": %.6f, \"free_s\": %.6f, "
         "\"verdicts\": %ld, \"pending\": %zu}\n",
         argv[1], n, entries, dt, dt > 0 ? entries / dt : 0.0, setup, pending_s, teardown,
         g_verdicts, pending);
  return g_verdicts != 0 || pending != 0;
}
