/* bootstrap.c - how the ranks of a simulated communicator find each other.
 *
 * Unique id. ncclGetUniqueId writes NCCL's layout (src/bootstrap.cc
 * ncclBootstrapHandle): a 64-bit random magic, then the root's socket
 * address: a sockaddr_in for 127.0.0.1 (or the address of NCCL_SOCKET_IFNAME,
 * or NCCL_COMM_ID=ip:port, whose magic is then fixed as in NCCL) with a port.
 * The remaining bytes are zero. No socket is opened: the ranks meet through
 * shared memory named after a hash of all 128 bytes (other tools may write
 * into the trailing bytes; every rank receives the same 128 bytes).
 *
 * Segment. One POSIX shared-memory object per communicator,
 * /a2asim-nccl-<uid>-<hash>, holding the rank table, a small allgather board,
 * one doorbell futex per rank and the channels (see sim_nccl.h). Every rank
 * opens it with O_CREAT and sizes it; the rank whose arrival completes the
 * communicator unlinks the name at once, so after init nothing is left in
 * /dev/shm and the kernel frees the memory when the last rank unmaps it or
 * dies. Residual window: if a rank dies (or never comes) before all ranks
 * arrived, the name stays; sim_seg_sweep(), run by ncclGetUniqueId and by
 * every init, unlinks segments older than A2ASIM_NCCL_SWEEP_AGE seconds
 * (default 5) whose recorded ranks are all dead.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/futex.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim_nccl.h"

uint64_t sim_hash(const void *p, size_t n, uint64_t h) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) {
    h ^= c[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

int sim_futex_wait(_Atomic uint32_t *w, uint32_t val, int timeout_ms) {
  struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
  long rc = syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, timeout_ms >= 0 ? &ts : NULL, NULL, 0);
  return rc == 0 || errno == ETIMEDOUT;
}

void sim_futex_wake(_Atomic uint32_t *w) {
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* The address the id advertises: NCCL_SOCKET_IFNAME's IPv4 address if it
 * names an interface that has one (a leading '^' or '=' is NCCL syntax and
 * is skipped), else loopback. */
static void id_address(struct sockaddr_in *sin) {
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const char *ifn = getenv("NCCL_SOCKET_IFNAME");
  if (!ifn || !*ifn || ifn[0] == '^') return;
  if (ifn[0] == '=') ifn++;
  struct ifaddrs *ifa = NULL;
  if (getifaddrs(&ifa) != 0) return;
  for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (strncmp(i->ifa_name, ifn, strlen(ifn)) != 0) continue;
    sin->sin_addr = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
    break;
  }
  freeifaddrs(ifa);
}

ncclResult_t sim_make_unique_id(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  uint64_t magic;
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  const char *env = getenv("NCCL_COMM_ID");
  if (env && *env) {
    /* "ip:port" - NCCL uses a fixed magic so every process derives the
     * same id from the environment. */
    char ip[64];
    const char *colon = strrchr(env, ':');
    if (!colon || (size_t)(colon - env) >= sizeof ip) {
      sim_warn("Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>");
      return ncclInvalidArgument;
    }
    memcpy(ip, env, (size_t)(colon - env));
    ip[colon - env] = 0;
    sin.sin_family = AF_INET;
    if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1) {
      sim_warn("Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>");
      return ncclInvalidArgument;
    }
    sin.sin_port = htons((uint16_t)atoi(colon + 1));
    magic = SIM_ID_MAGIC_FIXED;
  } else {
    if (getrandom(&magic, sizeof magic, 0) != (ssize_t)sizeof magic) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      magic = sim_hash(&ts, sizeof ts, (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL);
    }
    id_address(&sin);
    /* An ephemeral port, as the root's listening socket would get. */
    uint16_t port = (uint16_t)(32768 + (magic >> 17) % 28232);
    sin.sin_port = htons(port);
  }
  memcpy(id->internal, &magic, sizeof magic);
  memcpy(id->internal + sizeof magic, &sin, sizeof sin);
  return ncclSuccess;
}

SIM_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId *uniqueId) {
  if (uniqueId == NULL) {
    sim_warn("ncclGetUniqueId : uniqueId argument is NULL");
    return ncclInvalidArgument;
  }
  sim_seg_sweep();
  return sim_make_unique_id(uniqueId);
}

/* ---- segment layout ------------------------------------------------------ */
static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

static size_t env_step(void) {
  /* Slot size of a channel: NCCL's p2p chunk size (NCCL_P2P_NET_CHUNKSIZE
   * is 128 KiB; smaller here to keep /dev/shm small). Must agree across ranks. */
  const char *e = getenv("A2ASIM_NCCL_CHUNK");
  long v = e ? strtol(e, NULL, 0) : 0;
  if (v < 64 || v > (16 << 20)) v = 64 << 10;
  return (size_t)v & ~(size_t)7;
}

/* Computes the segment size for n ranks and, when seg->shm is mapped, the
 * addresses of its parts. Each doorbell gets its own cache line. */
static void layout(struct sim_seg *seg, int n, size_t step) {
  seg->nranks = n;
  seg->step = step;
  seg->chan_stride = align64(align64(sizeof(struct sim_chan)) + SIM_NSTEPS * step);
  size_t off = align64(sizeof(struct sim_shm));
  size_t o_ranks = off;
  off = align64(off + (size_t)n * sizeof(struct sim_rankinfo));
  size_t o_board = off;
  off = align64(off + 2 * (size_t)n * sizeof(struct sim_board_slot));
  size_t o_bell = off;
  off = align64(off + (size_t)n * SIM_BELL_STRIDE * sizeof(uint32_t));
  size_t o_chans = off;
  off += 2 * (size_t)n * n * seg->chan_stride;
  seg->size = off;
  char *b = (char *)seg->shm;
  seg->ranks = b ? (struct sim_rankinfo *)(b + o_ranks) : NULL;
  seg->board = b ? (struct sim_board_slot *)(b + o_board) : NULL;
  seg->bell = b ? (_Atomic uint32_t *)(b + o_bell) : NULL;
  seg->chans = b ? b + o_chans : NULL;
}

struct sim_chan *sim_chan_p2p(struct sim_seg *seg, int src, int dst) {
  return (struct sim_chan *)(seg->chans + ((size_t)src * seg->nranks + dst) * seg->chan_stride);
}

struct sim_chan *sim_chan_coll(struct sim_seg *seg, int src, int dst) {
  size_t n = (size_t)seg->nranks;
  return (struct sim_chan *)(seg->chans + (n * n + (size_t)src * n + dst) * seg->chan_stride);
}

static void seg_name(char *out, size_t len, uint64_t key) {
  snprintf(out, len, "/a2asim-nccl-%u-%016llx", (unsigned)getuid(), (unsigned long long)key);
}

ncclResult_t sim_seg_attach(struct sim_seg *seg, uint64_t key, int nranks) {
  memset(seg, 0, sizeof *seg);
  seg_name(seg->name, sizeof seg->name, key);
  size_t step = env_step();
  layout(seg, nranks, step);
  int fd = shm_open(seg->name, O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    sim_warn("Call to shm_open %s failed : %s", seg->name, strerror(errno));
    return ncclSystemError;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    sim_warn("Call to fstat failed : %s", strerror(errno));
    close(fd);
    return ncclSystemError;
  }
  /* Every rank sizes the object to what it expects; two ranks that disagree
   * on nranks are caught below by the header CAS. */
  if ((size_t)st.st_size < seg->size && ftruncate(fd, (off_t)seg->size) != 0) {
    sim_warn("Call to ftruncate %s failed : %s", seg->name, strerror(errno));
    close(fd);
    return ncclSystemError;
  }
  void *p = mmap(NULL, seg->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    sim_warn("Call to mmap %s failed : %s", seg->name, strerror(errno));
    return ncclSystemError;
  }
  seg->shm = p;
  layout(seg, nranks, step);
  struct sim_shm *h = seg->shm;
  int32_t zero = 0;
  atomic_compare_exchange_strong(&h->creator_pid, &zero, (int32_t)getpid());
  int32_t expect = 0;
  if (!atomic_compare_exchange_strong(&h->nranks, &expect, nranks) && expect != nranks) {
    sim_warn("Bootstrap : ranks of one unique id disagree on nranks (%d vs %d)", nranks, expect);
    munmap(p, seg->size);
    seg->shm = NULL;
    return ncclInvalidUsage;
  }
  expect = 0;
  if (!atomic_compare_exchange_strong(&h->step, &expect, (int32_t)step) && expect != (int32_t)step) {
    sim_warn("Bootstrap : ranks disagree on A2ASIM_NCCL_CHUNK (%zu vs %d)", step, expect);
    munmap(p, seg->size);
    seg->shm = NULL;
    return ncclInvalidUsage;
  }
  h->magic = SIM_SHM_MAGIC;
  return ncclSuccess;
}

void sim_seg_detach(struct sim_seg *seg) {
  if (seg->shm) munmap(seg->shm, seg->size);
  seg->shm = NULL;
}

/* Unlinks leftovers of communicators that never completed init because
 * ranks died: only objects older than A2ASIM_NCCL_SWEEP_AGE seconds
 * (default 5) whose recorded pids are all gone. */
/* (errno as it found it: whether a segment vanished between readdir and
 * shm_open - another process unlinked it - is a race with other jobs, and
 * the application must not see an errno that depends on it.) */
static void seg_sweep(void);
void sim_seg_sweep(void) {
  int saved = errno;
  seg_sweep();
  errno = saved;
}

static void seg_sweep(void) {
  const char *age_env = getenv("A2ASIM_NCCL_SWEEP_AGE");
  long min_age = age_env && *age_env ? strtol(age_env, NULL, 10) : 5;
  char prefix[64];
  snprintf(prefix, sizeof prefix, "a2asim-nccl-%u-", (unsigned)getuid());
  DIR *d = opendir("/dev/shm");
  if (!d) return;
  struct dirent *de;
  time_t now = time(NULL);
  while ((de = readdir(d)) != NULL) {
    if (strncmp(de->d_name, prefix, strlen(prefix)) != 0) continue;
    char name[300];
    snprintf(name, sizeof name, "/%s", de->d_name);
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0) continue;
    struct stat st;
    int stale = 0;
    if (fstat(fd, &st) == 0 && now - st.st_mtime >= min_age && (size_t)st.st_size >= sizeof(struct sim_shm)) {
      struct sim_shm *h = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
      if (h != MAP_FAILED) {
        int n = atomic_load(&h->nranks);
        struct sim_seg tmp = {.shm = h};
        layout(&tmp, n > 0 ? n : 1, (size_t)(atomic_load(&h->step) > 0 ? atomic_load(&h->step) : 64));
        int alive = 0;
        pid_t pids[1 + 4096];
        int npids = 0;
        pids[npids++] = atomic_load(&h->creator_pid);
        if (n > 0 && n <= 4096 && tmp.size <= (size_t)st.st_size)
          for (int r = 0; r < n; r++)
            if (atomic_load(&tmp.ranks[r].claimed)) pids[npids++] = tmp.ranks[r].pid;
        for (int i = 0; i < npids; i++)
          if (pids[i] > 0 && (kill(pids[i], 0) == 0 || errno == EPERM)) alive = 1;
        stale = !alive;
        munmap(h, (size_t)st.st_size);
      }
    }
    close(fd);
    if (stale) {
      sim_info("unlinking stale simulator segment %s", name);
      shm_unlink(name);
    }
  }
  closedir(d);
}
