/* scenario_procs.c - process shapes around the ranks, 4 ranks, a loop of
 * AllReduce + AlltoAll on a side stream, data verified.
 *
 *   parent_rank0   the launcher is itself rank 0: it creates the id, forks
 *                  ranks 1-3, then runs rank 0 (correct)
 *   parent_skip    BUGGY: the same, and rank 2 skips the AllReduce of step
 *                  3 -> group.deadlock naming rank 2, exit 66 within 15 s
 *                  (the id's creator, which hosts the coordinator, is rank 0
 *                  and itself blocked)
 *   subprocess     every rank runs a shell command in the middle of the run
 *                  (system("true") and popen("echo ...")) with LD_PRELOAD
 *                  inherited, like a framework logging `git rev-parse`
 *                  (correct)
 *   crash_exit     BUGGY: rank 2 hits an "exception" at step 3 and exits
 *                  with status 1; the others block in the next collective ->
 *                  group.deadlock, ranks 0,1,3 exit 66, rank 2 keeps its 1
 *   crash_kill     BUGGY: rank 2 is SIGKILLed at step 3 (OOM killer); the
 *                  others -> group.deadlock, exit 66
 *   quick_exit     after its last step (synchronized: every operation
 *                  completed) rank 3 leaves with _exit(0) - Python's
 *                  os._exit, no exit hook - without destroying its
 *                  communicator, while the others compute 1.5 s longer
 *                  (correct: no size.unmatched-p2p about operations its
 *                  last unsent records held)
 *   rank0_id       torch's TCPStore pattern: the launcher creates no id;
 *                  rank 0 calls ncclGetUniqueId and publishes the id (shared
 *                  memory + a host barrier), everyone inits (correct)
 *   rank0_id_skip  BUGGY: the same, and rank 3 skips the AllReduce of step
 *                  3 -> group.deadlock naming rank 3, exit 66 (the
 *                  coordinator lives in rank 0, itself blocked)
 *   store_hang     BUGGY, invisible to a2acheck: at step 2 rank 0 waits in a
 *                  host barrier (a TCPStore barrier) BEFORE its AllReduce,
 *                  ranks 1-3 enter it AFTER theirs: a real hang whose cycle
 *                  runs through a host-side wait. No group.deadlock may be
 *                  claimed early; with A2ACHECK_HANG_TIMEOUT=6 group.hang
 *                  ends it (exit 66)
 *   each_gets_id   NCCL_COMM_ID=ip:port is set (by the ctest entry): every rank
 *                  calls ncclGetUniqueId itself and gets the same id, as
 *                  NCCL documents for that variable (correct)
 *   creator_exits  a helper process creates the id, hands it over and exits
 *                  before the ranks start (a setup script): correct; cross-
 *                  rank checking may be off (a2acheck.no-coordinator info)
 *   late_skip      BUGGY: every rank computes 5 s on the host after step 2,
 *                  then rank 2 skips the AllReduce of step 3: the hang forms
 *                  late -> group.deadlock within 15 s of it (exit 66)
 *   exec_ranks     torchrun style: the launcher creates the id, writes it to a
 *                  file and starts every rank as a NEW program (fork + exec
 *                  of itself) with RANK / LOCAL_RANK / WORLD_SIZE set; ranks
 *                  read the id from the file (correct)
 *   exec_skip      BUGGY: the same, and rank 1 skips the AllReduce of step 3
 *                  -> group.deadlock, exit 66
 * Exit status of the program: see scenario_common.h.
 */
#include "scenario_common.h"

#define NR 4
#define N 2048L

static const char *mode;
static int is(const char *m) { return strcmp(mode, m) == 0; }

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  if (is("each_gets_id")) SC_NCCL(ncclGetUniqueId(&id));
  if (is("rank0_id") || is("rank0_id_skip")) {
    if (rank == 0) SC_NCCL(ncclGetUniqueId(&sc_sh->ids[0]));
    sc_barrier(); /* store.set / store.get */
    id = sc_sh->ids[0];
  }
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t cur, cs;
  SC_CUDA(cudaStreamCreateWithFlags(&cur, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  cudaEvent_t ev;
  SC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  float *in, *out, *a2a;
  SC_CUDA(cudaMalloc((void **)&in, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&out, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&a2a, N * sizeof(float)));
  float *h = malloc(N * sizeof(float));
  long bad = 0;
  for (int t = 0; t < 6; t++) {
    if (t == 3 && rank == 2 && is("crash_exit")) {
      fprintf(stderr, "rank 2: RuntimeError: CUDA out of memory (simulated), exiting\n");
      exit(1);
    }
    if (t == 3 && rank == 2 && is("crash_kill")) raise(SIGKILL);
    if (t == 2 && is("subprocess")) {
      fflush(NULL);
      if (system("true") != 0) bad++;
      FILE *p = popen("echo rev-1234", "r");
      char line[64] = "";
      if (!p || !fgets(line, sizeof line, p) || strncmp(line, "rev-1234", 8) != 0) bad++;
      if (p) pclose(p);
    }
    if (t == 2 && rank == 0 && is("store_hang")) sc_barrier();
    if (t == 3 && is("late_skip")) sc_busy(5.0);
    sc_fill(in, N, (float)(rank + t), 0.0f, cur);
    SC_CUDA(cudaEventRecord(ev, cur));
    SC_CUDA(cudaStreamWaitEvent(cs, ev, 0));
    if (!(t == 3 && rank == 1 && is("exec_skip")) &&
        !(t == 3 && rank == 2 && (is("parent_skip") || is("late_skip"))) && !(t == 3 && rank == 3 && is("rank0_id_skip")))
      SC_NCCL(ncclAllReduce(in, out, N, ncclFloat32, ncclSum, comm, cs));
    SC_NCCL(ncclAlltoAll(in, a2a, N / nranks, ncclFloat32, comm, cs));
    SC_CUDA(cudaStreamSynchronize(cs));
    if (t == 2 && rank != 0 && is("store_hang")) sc_barrier();
    SC_CUDA(cudaMemcpy(h, out, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++)
      if (h[i] != (float)(6 + 4 * t) && bad++ < 3) fprintf(stderr, "rank %d: out[%ld]=%g\n", rank, i, h[i]);
    SC_CUDA(cudaMemcpy(h, a2a, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < N; i++)
      if (h[i] != (float)(i / (N / nranks) + t) && bad++ < 3) fprintf(stderr, "rank %d: a2a[%ld]=%g\n", rank, i, h[i]);
  }
  sc_sh->result[rank] = bad;
  if (is("quick_exit")) {
    if (rank == 3) {
      fflush(NULL);
      _exit(bad ? SC_DATA_WRONG : 0);
    }
    usleep(1500 * 1000);
  }
  free(h);
  SC_CUDA(cudaFree(in));
  SC_CUDA(cudaFree(out));
  SC_CUDA(cudaFree(a2a));
  SC_CUDA(cudaEventDestroy(ev));
  SC_CUDA(cudaStreamDestroy(cur));
  SC_CUDA(cudaStreamDestroy(cs));
  SC_NCCL(ncclCommDestroy(comm));
  return bad ? SC_DATA_WRONG : 0;
}

/* The launcher is rank 0 itself. */
static int parent_is_rank0(void) {
  sc_sh = sc_shared_create(NR);
  ncclUniqueId id;
  SC_NCCL(ncclGetUniqueId(&id));
  fflush(NULL);
  pid_t pids[NR];
  for (int r = 1; r < NR; r++) {
    pid_t p = fork();
    if (p < 0) exit(1);
    if (p == 0) {
      sc_rank = r;
      SC_CUDA(cudaSetDevice(r));
      sc_register_kernels();
      exit(rank_main(r, NR, id, NULL));
    }
    pids[r] = p;
  }
  sc_rank = 0;
  SC_CUDA(cudaSetDevice(0));
  sc_register_kernels();
  int st0 = rank_main(0, NR, id, NULL);
  pids[0] = 0;
  /* wait for the children (ranks 1..3) */
  sc_print_base = 1;
  int st = sc_wait_ranks(pids + 1, NR - 1, SC_WAIT_LIMIT_S, 0);
  printf("rank 0 (launcher) status %d\n", st0);
  for (int r = 0; r < NR; r++) printf("rank %d result %ld\n", r, sc_sh->result[r]);
  if (st0 != 0) return st0;
  return st;
}

/* creator_exits: a helper creates the id and exits before the ranks start */
static int creator_exits(void) {
  sc_sh = sc_shared_create(NR);
  fflush(NULL);
  pid_t h = fork();
  if (h == 0) {
    SC_NCCL(ncclGetUniqueId(&sc_sh->ids[0]));
    exit(0);
  }
  int ws;
  waitpid(h, &ws, 0);
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) return 1;
  ncclUniqueId id = sc_sh->ids[0];
  pid_t pids[NR];
  for (int r = 0; r < NR; r++) {
    pid_t p = fork();
    if (p == 0) {
      sc_rank = r;
      SC_CUDA(cudaSetDevice(r));
      sc_register_kernels();
      exit(rank_main(r, NR, id, NULL));
    }
    pids[r] = p;
  }
  return sc_wait_ranks(pids, NR, SC_WAIT_LIMIT_S, 1);
}

/* exec_ranks / exec_skip: the launcher side */
static int exec_launcher(const char *self) {
  ncclUniqueId id;
  SC_NCCL(ncclGetUniqueId(&id));
  char path[] = "/tmp/qa_scenario_id_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || write(fd, &id, sizeof id) != (ssize_t)sizeof id) return 1;
  close(fd);
  fflush(NULL);
  pid_t pids[NR];
  for (int r = 0; r < NR; r++) {
    pid_t p = fork();
    if (p == 0) {
      char rb[8], wb[8];
      snprintf(rb, sizeof rb, "%d", r);
      snprintf(wb, sizeof wb, "%d", NR);
      setenv("RANK", rb, 1);
      setenv("LOCAL_RANK", rb, 1);
      setenv("WORLD_SIZE", wb, 1);
      execl(self, self, is("exec_skip") ? "exec_child_skip" : "exec_child", path, (char *)NULL);
      _exit(127);
    }
    pids[r] = p;
  }
  int st = sc_wait_ranks(pids, NR, SC_WAIT_LIMIT_S, 0);
  unlink(path);
  return st;
}

/* exec_child: a fresh process (no inherited state) */
static int exec_child(const char *path) {
  int rank = atoi(getenv("RANK")), n = atoi(getenv("WORLD_SIZE"));
  sc_rank = rank;
  sc_sh = sc_shared_create(n); /* private here: only result[] is used */
  ncclUniqueId id;
  FILE *f = fopen(path, "rb");
  if (!f || fread(&id, sizeof id, 1, f) != 1) return 1;
  fclose(f);
  SC_CUDA(cudaSetDevice(atoi(getenv("LOCAL_RANK"))));
  sc_register_kernels();
  return rank_main(rank, n, id, NULL);
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "parent_rank0";
  if (is("exec_child") || is("exec_child_skip")) {
    mode = is("exec_child") ? "exec_ranks" : "exec_skip";
    return argc > 2 ? exec_child(argv[2]) : 1;
  }
  if (is("exec_ranks") || is("exec_skip")) return exec_launcher("/proc/self/exe");
  if (is("creator_exits")) return creator_exits();
  if (is("parent_rank0") || is("parent_skip")) return parent_is_rank0();
  return sc_fork_ranks(NR, rank_main, NULL);
}
