/* bench_moe.c - an MoE-like training step on NRANKS ranks (forked processes,
 * e2e_run_ranks), for bench/run's with/without ratios:
 *
 *   per step, on each rank:
 *     compute stream: LAUNCHES/2 small kernels (attention, router), event
 *       `routed`;
 *     communication stream: waits `routed`, a grouped all-to-all of unequal
 *       sizes (dispatch: ncclSend/ncclRecv per peer, rank r sends
 *       count(r, p) floats to p), event `dispatched`;
 *     compute stream: waits `dispatched`, LAUNCHES/2 kernels (the experts),
 *       event `expert`;
 *     communication stream: waits `expert`, the combine all-to-all (the
 *       transposed sizes), then one ncclAllReduce (gradients), event `done`;
 *     compute stream waits `done`; the host synchronizes once per step.
 *
 * moe_step() is kept out of line so that callgrind --toggle-collect=moe_step
 * counts exactly the application threads' instructions for the measured
 * steps, after WARMUP steps run by moe_warmup() (the simulator's work on
 * those threads included; the run without the shim subtracts it). Rank 0 prints one JSON line with the wall time per step of
 * the timed steps (after WARMUP untimed ones).
 *
 * WARMUP defaults to 24: a long-running job's steady state. The perf
 * analyzer times every one of a communicator's first 64 logical
 * operations (three per step here: two grouped all-to-alls and the
 * allreduce), then one in 16 (analyzers/perf_comm.c, pc_timed): 24 steps
 * are past that start, and 16 measured steps after them (operations 72 to
 * 119) time exactly 3 of their 48 operations, the long-run rate. A
 * WARMUP of 2 measures a job's first steps instead (bench/run's
 * moe.start).
 *
 * Usage: bench_moe [STEPS [NRANKS [LAUNCHES [WARMUP]]]] (defaults 20, 8, 200, 24). */
#include "e2e_common.h"

#include <time.h>

enum { WARMUP = 24, BASE = 64 };

typedef struct cfg {
  int steps, launches, warmup;
} cfg;

typedef struct rank_state {
  int rank, nranks, launches;
  ncclComm_t comm;
  cudaStream_t sc, sm;
  cudaEvent_t routed, dispatched, expert, done;
  float *act, *send, *recv, *grad;
  size_t off_send[E2E_MAX_RANKS], off_recv[E2E_MAX_RANKS];
} rank_state;

/* Unequal, deterministic: floats rank `from` sends to rank `to`. */
static size_t count_of(int from, int to) { return BASE + (size_t)((from * 7 + to * 13) % 11) * 16; }

static void a2a(const rank_state *st, int combine) {
  E2E_NCCL(ncclGroupStart());
  for (int p = 0; p < st->nranks; p++) {
    /* combine sends back what was received: the transposed counts */
    size_t out = combine ? count_of(p, st->rank) : count_of(st->rank, p);
    size_t in = combine ? count_of(st->rank, p) : count_of(p, st->rank);
    float *sb = combine ? st->recv + st->off_recv[p] : st->send + st->off_send[p];
    float *rb = combine ? st->send + st->off_send[p] : st->recv + st->off_recv[p];
    E2E_NCCL(ncclSend(sb, out, ncclFloat, p, st->comm, st->sm));
    E2E_NCCL(ncclRecv(rb, in, ncclFloat, p, st->comm, st->sm));
  }
  E2E_NCCL(ncclGroupEnd());
}

/* Out of line, called by both (below): every call site of the step is the
 * same in the warm-up and the measured steps. */
__attribute__((noinline, noclone)) static void steps_body(rank_state *st, int steps) {
  for (int s = 0; s < steps; s++) {
    for (int i = 0; i < st->launches / 2; i++) e2e_add(st->sc, st->act, st->act, 64, 1.0f);
    E2E_CUDA(cudaEventRecord(st->routed, st->sc));
    E2E_CUDA(cudaStreamWaitEvent(st->sm, st->routed, 0));
    a2a(st, 0);
    E2E_CUDA(cudaEventRecord(st->dispatched, st->sm));
    E2E_CUDA(cudaStreamWaitEvent(st->sc, st->dispatched, 0));
    for (int i = 0; i < st->launches - st->launches / 2; i++) e2e_add(st->sc, st->recv, st->recv, 64, 1.0f);
    E2E_CUDA(cudaEventRecord(st->expert, st->sc));
    E2E_CUDA(cudaStreamWaitEvent(st->sm, st->expert, 0));
    a2a(st, 1);
    E2E_NCCL(ncclAllReduce(st->grad, st->grad, 4096, ncclFloat, ncclSum, st->comm, st->sm));
    E2E_CUDA(cudaEventRecord(st->done, st->sm));
    E2E_CUDA(cudaStreamWaitEvent(st->sc, st->done, 0));
    E2E_CUDA(cudaStreamSynchronize(st->sc));
  }
  __asm__ volatile("" ::: "memory");
}

/* The warm-up and the measured steps run the same body from two functions:
 * callgrind --toggle-collect=moe_step counts only the measured ones. The
 * warm-up takes what a process pays once (the shim resolving each real
 * function on its first call, the first unwind of each call site, kernel
 * parameter layouts): "fixed cost per process" is its own figure, and
 * counting it here made the per-step ratio depend on how many steps were
 * measured. (The body is one out-of-line function, not inlined into each:
 * inlined, the calls had other return addresses in the measured steps, so
 * the first unwind of each call site the shim remembers - the allreduce's,
 * the events' - fell in the first measured step.) */
__attribute__((noinline, noclone)) void moe_warmup(rank_state *st, int steps) { steps_body(st, steps); }
__attribute__((noinline, noclone)) void moe_step(rank_state *st, int steps) { steps_body(st, steps); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  const cfg *c = arg;
  rank_state st = {.rank = rank, .nranks = nranks, .launches = c->launches, .comm = comm};
  size_t ns = 0, nr = 0;
  for (int p = 0; p < nranks; p++) {
    st.off_send[p] = ns;
    st.off_recv[p] = nr;
    ns += count_of(rank, p);
    nr += count_of(p, rank);
  }
  st.sc = e2e_stream();
  st.sm = e2e_stream();
  st.routed = e2e_event();
  st.dispatched = e2e_event();
  st.expert = e2e_event();
  st.done = e2e_event();
  st.act = e2e_dalloc(64 * sizeof(float));
  st.send = e2e_dalloc(ns * sizeof(float));
  st.recv = e2e_dalloc((nr > 64 ? nr : 64) * sizeof(float));
  st.grad = e2e_dalloc(4096 * sizeof(float));
  moe_warmup(&st, c->warmup);
  double t0 = now_s();
  moe_step(&st, c->steps);
  double t1 = now_s();
  if (rank == 0)
    printf("{\"ranks\": %d, \"steps\": %d, \"launches\": %d, \"ms_per_step\": %.4f}\n", nranks,
           c->steps, c->launches, (t1 - t0) / c->steps * 1e3);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  cfg c = {.steps = argc > 1 ? atoi(argv[1]) : 20,
           .launches = argc > 3 ? atoi(argv[3]) : 200,
           .warmup = argc > 4 ? atoi(argv[4]) : WARMUP};
  int nranks = argc > 2 ? atoi(argv[2]) : 8;
  if (c.steps < 1 || c.launches < 2 || c.warmup < 0 || nranks < 2 || nranks > E2E_MAX_RANKS) {
    fprintf(stderr, "usage: %s [STEPS [NRANKS [LAUNCHES [WARMUP]]]]\n", argv[0]);
    return 2;
  }
  return e2e_verdict(NULL, e2e_run_ranks(nranks, e2e_register_kernels, rank_main, &c));
}
