/* rt_host.c - the host services (a2a_host, analyzers/a2a_core.h) the
 * analyzers use to ask the process something, implemented with the REAL
 * CUDA runtime functions (A2A_REAL, shim/intercept.h), so the tool's own
 * calls create no events and never run a wrapper.
 *
 * The last-error rule. The CUDA runtime keeps a per-thread "last error"
 * that cudaGetLastError() returns and clears; an internal call that fails
 * would set it and the application would see an error it never caused.
 * Therefore every service that calls the runtime:
 *   1. peeks first: if cudaPeekAtLastError() != cudaSuccess, the
 *      application has a pending error; the service does NOT call the
 *      runtime (it would be unable to restore that state) and reports
 *      failure to the analyzer;
 *   2. calls the runtime;
 *   3. if that call failed, consumes the error it left with
 *      cudaGetLastError(), restoring "no error" - the state it found.
 * errno is preserved around all of it. Sticky errors (a corrupted context)
 * cannot be cleared by anyone; the peek in step 1 sees them and the service
 * stays away.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intercept.h"
#include "core_internal.h"
#include "rt_internal.h"

/* Step 1 of the rule. */
static bool cuda_quiet(void) {
  /* No shared CUDA runtime in the process (static cudart, or none loaded
   * yet): nothing to ask, and asking through A2A_REAL would warn about an
   * unresolved symbol and rescan the loaded objects at every call. */
  if (!A2A_FOUND(cudaPeekAtLastError)) return false;
  return A2A_REAL(cudaPeekAtLastError)() == cudaSuccess;
}

/* Step 3 of the rule: returns 0 for success, -1 otherwise. */
static int cuda_done(cudaError_t e) {
  if (e == cudaSuccess) return 0;
  (void)A2A_REAL(cudaGetLastError)();
  return -1;
}

static uint64_t host_now_ns(void) { return a2a_rt_now_ns(); }

static int host_pointer_info(const void *p, a2a_ptrinfo *out) {
  int saved = errno, rc = -1;
  if (cuda_quiet()) {
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    cudaError_t e = A2A_REAL(cudaPointerGetAttributes)(&a, p);
    rc = cuda_done(e);
    if (rc == 0) {
      out->type = (int)a.type;
      out->device = a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeUnregistered
                        ? -1 : a.device;
    }
  }
  errno = saved;
  return rc;
}

static int host_func_name(const void *func, const char **name) {
  int saved = errno, rc = -1;
  if (cuda_quiet()) rc = cuda_done(A2A_REAL(cudaFuncGetName)(name, func));
  errno = saved;
  return rc;
}

static int host_func_param_info(const void *func, size_t idx, size_t *offset,
                                size_t *size) {
  int saved = errno, rc = -1;
  if (cuda_quiet()) rc = cuda_done(A2A_REAL(cudaFuncGetParamInfo)(func, idx, offset, size));
  errno = saved;
  return rc;
}

static int host_event_create(void **ev, int timing) {
  int saved = errno, rc = -1;
  if (cuda_quiet())
    rc = cuda_done(A2A_REAL(cudaEventCreateWithFlags)(
        (cudaEvent_t *)ev, timing ? cudaEventDefault : cudaEventDisableTiming));
  errno = saved;
  return rc;
}

/* Events belong to the device current when they are created and record
 * only on its streams, and one thread may post operations on several
 * devices' streams (nccl-tests -g N, ncclCommInitAll: the current device
 * is the last the thread set, not the operation's). The thread's device is
 * switched for the creation and back - what NCCL's own group launch does
 * around each communicator (cudaGetDevice, cudaSetDevice, cudaSetDevice
 * back) - through the REAL runtime: no event, and the tracked device
 * (a2a_rt_t.device) is right again when this returns. Only where the
 * thread set its device with cudaSetDevice and the runtime agrees: a
 * context made current through the driver API (cuCtxSetCurrent) need not
 * be the device's primary one, which cudaSetDevice back would put in its
 * place (-2: not switched, nothing created). Blind spot, as for the
 * tracked device (shim/intercept.h): a non-primary context of the same
 * device made current after a cudaSetDevice is replaced by the primary
 * one. -3: the application has an error pending (the last-error rule):
 * nothing was asked, and nothing is wrong with the runtime. */
static int host_event_create_on(void **ev, int device, int timing) {
  int saved = errno, rc = -1, cur = -1;
  const unsigned flags = timing ? cudaEventDefault : cudaEventDisableTiming;
  if (!A2A_FOUND(cudaGetDevice) || !A2A_FOUND(cudaSetDevice)) {
    rc = -1;
  } else if (!cuda_quiet()) {
    rc = A2A_FOUND(cudaPeekAtLastError) ? -3 : -1;
  } else if (cuda_done(A2A_REAL(cudaGetDevice)(&cur)) != 0) {
    rc = -1;
  } else if (cur == device) {
    rc = cuda_done(A2A_REAL(cudaEventCreateWithFlags)((cudaEvent_t *)ev, flags));
  } else if (!a2a_rt_t.device_set || a2a_rt_t.device != cur) {
    rc = -2;
  } else {
    if (cuda_done(A2A_REAL(cudaSetDevice)(device)) != 0) {
      rc = -2;
    } else {
      rc = cuda_done(A2A_REAL(cudaEventCreateWithFlags)((cudaEvent_t *)ev, flags));
    }
    /* Back to the thread's device - also after a failed switch, which may
     * still have changed it. It was current a moment ago; should the
     * runtime refuse now (a sticky error since), a second try is all
     * that can be done, and the application is told on stderr. */
    int now = -1;
    if (cuda_done(A2A_REAL(cudaGetDevice)(&now)) != 0 || now != cur) {
      if (cuda_done(A2A_REAL(cudaSetDevice)(cur)) != 0 &&
          cuda_done(A2A_REAL(cudaSetDevice)(cur)) != 0) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
          a2a_rt_stderr("warning: the runtime refused to make device %d current again after "
                        "a completion event was created on device %d: this thread's current "
                        "device may have changed", cur, device);
      }
    }
  }
  errno = saved;
  return rc;
}

static int host_event_record(void *ev, void *stream) {
  int saved = errno, rc = -1;
  if (cuda_quiet())
    rc = cuda_done(A2A_REAL(cudaEventRecord)((cudaEvent_t)ev, (cudaStream_t)stream));
  errno = saved;
  return rc;
}

/* Step 3 for the queries: 0 complete, 1 pending, -1 error. The runtime
 * does not record cudaErrorNotReady as the last error; consuming it anyway
 * is harmless: the caller peeked "no error" before. */
static int query_done(cudaError_t e) {
  if (e != cudaSuccess) (void)A2A_REAL(cudaGetLastError)();
  return e == cudaSuccess ? 0 : e == cudaErrorNotReady ? 1 : -1;
}

static int host_event_query(void *ev) {
  int saved = errno, rc = -1;
  if (cuda_quiet()) rc = query_done(A2A_REAL(cudaEventQuery)((cudaEvent_t)ev));
  errno = saved;
  return rc;
}

static int host_event_elapsed_ms(float *ms, void *start, void *end) {
  int saved = errno, rc = -1;
  if (cuda_quiet())
    rc = cuda_done(A2A_REAL(cudaEventElapsedTime)(ms, (cudaEvent_t)start, (cudaEvent_t)end));
  errno = saved;
  return rc;
}

static int host_event_destroy(void *ev) {
  int saved = errno, rc = -1;
  if (cuda_quiet()) rc = cuda_done(A2A_REAL(cudaEventDestroy)((cudaEvent_t)ev));
  errno = saved;
  return rc;
}

static int host_stream_query(void *stream) {
  int saved = errno, rc = -1;
  if (cuda_quiet()) rc = query_done(A2A_REAL(cudaStreamQuery)((cudaStream_t)stream));
  errno = saved;
  return rc;
}

static int host_capture_id(void *stream, int per_thread, uint64_t *id) {
  int saved = errno, rc = -1;
  if (cuda_quiet()) {
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    unsigned long long cid = 0;
    cudaStream_t h = per_thread && !stream ? cudaStreamPerThread : (cudaStream_t)stream;
    if (cuda_done(A2A_REAL(cudaStreamGetCaptureInfo)(h, &st, &cid, NULL, NULL, NULL, NULL)) == 0) {
      rc = st == cudaStreamCaptureStatusActive ? 1 : st == cudaStreamCaptureStatusInvalidated ? 2 : 0;
      *id = rc ? cid : 0;
    }
  }
  errno = saved;
  return rc;
}

bool a2a_rt_stream_not_capturing(void *stream) {
  int saved = errno;
  bool none = false;
  if (cuda_quiet()) {
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    none = cuda_done(A2A_REAL(cudaStreamIsCapturing)((cudaStream_t)stream, &st)) == 0 &&
           st == cudaStreamCaptureStatusNone;
  }
  errno = saved;
  return none;
}

/* cudaStreamGetDevice exists from CUDA 12.8 on: asked only when found
 * (A2A_FOUND resolves without calling the fallback, which would warn). */
static int host_stream_device(void *stream, int *device) {
  int saved = errno, rc = -1;
  if (A2A_FOUND(cudaStreamGetDevice) && cuda_quiet()) {
    int d = -1;
    rc = cuda_done(A2A_REAL(cudaStreamGetDevice)((cudaStream_t)stream, &d));
    if (rc == 0) *device = d;
  }
  errno = saved;
  return rc;
}

static int host_comm_info(void *comm, int *nranks, int *rank, int *device) {
  int saved = errno, n = -1, r = -1, d = -1;
  ncclComm_t c = (ncclComm_t)comm;
  int rc = c && A2A_REAL(ncclCommCount)(c, &n) == ncclSuccess &&
                   A2A_REAL(ncclCommUserRank)(c, &r) == ncclSuccess &&
                   A2A_REAL(ncclCommCuDevice)(c, &d) == ncclSuccess
               ? 0
               : -1;
  if (rc == 0) {
    *nranks = n;
    *rank = r;
    *device = d;
  }
  errno = saved;
  return rc;
}

static const void *host_caller_site(const void *pc) { return a2a_rt_py_site(pc); }

static void host_capture_stack(a2a_stack *st) { a2a_rt_capture_stack(st); }

static const char *host_hostname(void) { return a2a_rt.host; }

static void host_fail_now(const char *reason) { a2a_rt_fail_now(reason); }

extern char **environ;
static const char *host_getenv(const char *name) { return getenv(name); }
static char **host_environ(void) { return environ; }


/* One frame of the runtime's symbolizer (it needs a2a_rt_mu; a site is
 * rendered once per site and connection, never on the hot path). */
static void host_site_text(const void *pc, char *buf, size_t cap) {
  static char frames[4][A2A_RT_FRAME_LEN];
  if (!pc || !a2a_rt_lock_within(2)) {
    snprintf(buf, cap, "%p", pc);
    return;
  }
  int saved = errno;
  int n = a2a_rt_symbolize(pc, frames, 4);
  /* The outermost of the inlined frames is the real function; the
   * innermost (frame 0) is where the call is: keep that one. For a Python
   * call site frame 0 is the user's Python frame; one that does not fit
   * loses the start of its path, never its line. */
  a2a_rt_py_fit(n > 0 ? frames[0] : "?", buf, cap);
  pthread_mutex_unlock(&a2a_rt_mu);
  errno = saved;
}
static bool host_fail_policy(a2a_check_id check, int severity) {
  return a2a_rt_failpol_matches(&a2a_rt.failpol, check, (a2a_severity)severity);
}

/* ---- the global rank ---- */

int a2a_rt_env_rank(a2a_rt_getenv_fn getenv_fn) {
  static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                     "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *s = getenv_fn(vars[i]);
    long v;
    if (!s || !*s) continue;
    if (a2a_rt_parse_long(s, 0, 1 << 24, &v)) return (int)v;
    a2a_rt_stderr("warning: %s=\"%s\" is not a rank (a decimal integer >= 0); ignored",
                  vars[i], s);
  }
  return -1;
}

static _Atomic int g_comm_rank = -1;

static int first_comm(a2a_comm *c, void *arg) {
  if (c->serial != 1) return 0;
  *(int *)arg = c->rank;
  return 1;
}

int a2a_rt_global_rank(void) {
  if (a2a_rt.env_rank >= 0) return a2a_rt.env_rank;
  int r = atomic_load_explicit(&g_comm_rank, memory_order_relaxed);
  if (r >= 0) return r;
  /* No launcher variable: the rank in the first communicator this process
   * created, once there is one. Cached: it never changes afterwards. */
  r = -1;
  a2a_comm_foreach(first_comm, &r);
  if (r >= 0) atomic_store_explicit(&g_comm_rank, r, memory_order_relaxed);
  return r;
}

const a2a_host a2a_rt_host = {
    .now_ns = host_now_ns,
    .pointer_info = host_pointer_info,
    .func_name = host_func_name,
    .func_param_info = host_func_param_info,
    .event_create = host_event_create,
    .event_create_on = host_event_create_on,
    .event_record = host_event_record,
    .event_query = host_event_query,
    .event_elapsed_ms = host_event_elapsed_ms,
    .event_destroy = host_event_destroy,
    .stream_query = host_stream_query,
    .stream_device = host_stream_device,
    .capture_id = host_capture_id,
    .comm_info = host_comm_info,
    .caller_site = host_caller_site,
    .capture_stack = host_capture_stack,
    .global_rank = a2a_rt_global_rank,
    .thread_exited = a2a_rt_thread_exited,
    .hostname = host_hostname,
    .fail_now = host_fail_now,
    .fail_policy = host_fail_policy,
    .site_text = host_site_text,
    .getenv = host_getenv,
    .environ = host_environ,
    .infiniband_present = a2a_infiniband_present,
};
