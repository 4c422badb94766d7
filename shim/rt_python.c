/* rt_python.c - Python call sites: the Python stack of the thread that made
 * an intercepted call, read from the interpreter at run time, with no link
 * dependency on libpython (docs/design.md, "Python call sites").
 *
 * Finding the interpreter. Once, at the first use (an NCCL call or a stack
 * capture): the C API functions used here are looked up with
 * dlsym(RTLD_DEFAULT) - the main program for a statically linked python
 * (it exports its symbols), or a libpython3.*.so loaded globally - else in
 * a libpython3* object found with dl_iterate_phdr and opened with
 * RTLD_NOLOAD (an interpreter embedded with dlopen(RTLD_LOCAL)). The
 * version (Py_Version, else Py_GetVersion) selects the layout: built in for
 * 3.9-3.12 (rt_pyframe.c), 3.13's own _Py_DebugOffsets; other versions,
 * PyPy, debug (Py_REF_DEBUG) and free-threaded builds get no Python frames
 * (said once in the log header).
 *
 * The GIL rule: never taken. A thread's frames are read only by that
 * thread, inside an intercepted call (the wrapper, or a finding raised
 * there), and only by pure reads: PyGILState_GetThisThreadState() (a TLS
 * read) gives its thread state; the frame chain, each frame's code object
 * and position, the code object's file, name and first line, and the
 * strings' characters are read at the layout's offsets; PyCode_Addr2Line()
 * turns a position into a line (it only reads the code's line table). No
 * reference count, allocation or cache of the interpreter is touched. That
 * is safe without the GIL because
 *   - only the thread itself pushes and pops its frames, and it executes no
 *     bytecode while it is inside our call: if it released the GIL (torch's
 *     gil_scoped_release around every collective, ctypes) it cannot run
 *     Python until it returns; if it holds the GIL nobody else runs Python;
 *   - what is read of code objects and strings is immutable after creation
 *     and kept alive by those frames; lazily filled fields (utf8 caches,
 *     frame objects, specialized bytecode) are never read;
 *   - other threads may run Python concurrently: we write nothing they read.
 * Taking the GIL instead (PyGILState_Ensure) could deadlock: the GIL holder
 * may be waiting for a lock the calling thread holds (ProcessGroupNCCL's
 * own, an application lock around the collective), and a reporting thread
 * (the cross-rank background thread) may never hold Python state at all;
 * during finalization Ensure even ends the calling thread. Reading other
 * threads' frames would race with their interpreter and is never done:
 * findings raised on other threads use the sites and stacks captured on the
 * calling thread (call-site handles, stacks of the stream analyzer). A
 * thread without Python state (NCCL's and torch's watchdog threads, our
 * background thread) has native frames only.
 *
 * Trust in the layout: the first walk that finds frames reads through
 * process_vm_readv() on this process (or, where that is refused, write(2)
 * into a pipe), which fails with EFAULT instead of crashing, and checks
 * every code object and string against PyCode_Type / PyUnicode_Type. Once
 * such a walk succeeds the layout is trusted and later walks read memory
 * directly (no system call); if it fails, Python frames stay off for the
 * process and the log header says why.
 *
 * Interning. Frames are named once: a lock-free table keyed by (code
 * object, its file and name objects, first line, position) keeps each
 * frame's text ("func (path:line)") and class (user, library, stdlib:
 * a2a_rt_py_classify). The table fills on first sight, on the calling
 * thread while its frames are alive; later lookups cost a hash probe.
 * The key includes the name objects so that a code object freed and
 * another allocated at its address is not mistaken for it (a coincidence
 * of all five is needed). Full (4095 frames): further frames are folded as
 * "not recorded".
 *
 * Handles (a2a_rt_is_handle, bit 63 set; never a user-space address):
 *   kind 1 SITE    bits 48..59 frame index + 1, bits 0..47 the native pc
 *   kind 2 FRAME   bits 0..11 frame index
 *   kind 3 FOLD    bits 0..9 count, 10..21 innermost frame + 1, 22..33 a
 *                  frame of a second library + 1, 34..39 libraries,
 *                  bit 40 the leading run (inside the innermost user frame)
 *   kind 4 NATIVE  bits 0..47 a native pc captured under Python frames
 * (kind in bits 60..62). They are opaque to the analyzers and the
 * cross-rank channel (a site is a uint64 there) and rendered only by the
 * symbolizer.
 *
 * Stack layout of a capture on a Python thread: the innermost user frame
 * and its callers outwards, each run of library frames between them folded
 * into one "... N frames in LIB" line; then the run of library frames
 * inside the innermost user frame (the torch API it called) as one
 * "... N frames in torch, innermost all_to_all_single" line; then the
 * native frames from the intercepted call outwards, cut where the
 * interpreter begins (pybind11 glue dropped when rendered). If no frame is
 * user code, the innermost frame outside the standard library takes that
 * place.
 *
 * Limits: a daemon thread that makes an NCCL call while the interpreter is
 * being finalized can have its thread state freed under it (checked with
 * Py_IsInitialized / _Py_IsFinalizing before each walk; the window left is
 * the interpreter's own shutdown of a thread it no longer waits for).
 * Sub-interpreters: PyGILState_GetThisThreadState gives the main
 * interpreter's state of the thread. An interpreter loaded after the first
 * NCCL call is not found.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rt_internal.h"

/* ---- the interpreter ---- */

enum { PY_UNKNOWN = 0, PY_RESOLVING, PY_READY, PY_OFF };

static struct {
  int (*is_init)(void);
  int (*is_fin)(void);              /* may be NULL */
  void *(*tstate)(void);
  int (*addr2line)(void *code, int byte_offset);
  uintptr_t code_type, str_type, none;
  uintptr_t lo, hi;                 /* the interpreter's object */
  a2a_rt_py_layout L;
  char status[200];
} g;
static _Atomic int g_state;
/* g_state == PY_OFF, for the inline a2a_rt_py_site (a2a_runtime.h). */
_Atomic bool a2a_rt_py_off;
static _Atomic int g_trusted;       /* 0 not yet, 1 trusted, -1 refused */
static pthread_mutex_t g_vmu = PTHREAD_MUTEX_INITIALIZER;   /* the checked walk */
static int g_pipe[2] = {-1, -1};

/* The object that contains an address: its whole PT_LOAD range. */
typedef struct range_ctx {
  uintptr_t addr, lo, hi;
} range_ctx;

static int range_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  range_ctx *c = arg;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  bool in = false;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
    if (c->addr >= a && c->addr < b) in = true;
    if (a < lo) lo = a;
    if (b > hi) hi = b;
  }
  if (!in) return 0;
  c->lo = lo;
  c->hi = hi;
  return 1;
}

/* A loaded libpython3*: its path (opened after the iteration: no dlopen
 * inside the loader's callback). */
static int libpython_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  char *name = arg;
  const char *n = info->dlpi_name ? info->dlpi_name : "";
  const char *b = strrchr(n, '/');
  b = b ? b + 1 : n;
  if (strncmp(b, "libpython3", 10) != 0 || strlen(n) >= 512) return 0;
  memcpy(name, n, strlen(n) + 1);
  return 1;
}

static void *g_handle;
static void *sym(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  if (!p && g_handle) p = dlsym(g_handle, name);
  return p;
}

/* CPython is here but its frames cannot be read: said once on stderr. */
static void set_off(const char *fmt, const char *arg) {
  snprintf(g.status, sizeof g.status, fmt, arg);
  atomic_store(&g_state, PY_OFF);
  atomic_store(&a2a_rt_py_off, true);
  a2a_rt_stderr("warning: %s; findings show native frames only", g.status);
}

static void resolve(void) {
  if (!dlsym(RTLD_DEFAULT, "Py_IsInitialized")) {
    char name[512] = "";
    dl_iterate_phdr(libpython_cb, name);
    /* Kept open: the pointers below must outlive any dlclose of it. */
    if (name[0]) g_handle = dlopen(name, RTLD_NOLOAD | RTLD_LAZY);
  }
  g.is_init = (int (*)(void))sym("Py_IsInitialized");
  g.tstate = (void *(*)(void))sym("PyGILState_GetThisThreadState");
  g.addr2line = (int (*)(void *, int))sym("PyCode_Addr2Line");
  g.code_type = (uintptr_t)sym("PyCode_Type");
  g.str_type = (uintptr_t)sym("PyUnicode_Type");
  g.none = (uintptr_t)sym("_Py_NoneStruct");
  const char *(*getver)(void) = (const char *(*)(void))sym("Py_GetVersion");
  if (!g.is_init || !g.tstate || !g.addr2line || !g.code_type || !g.str_type || !getver) {
    g.status[0] = 0;   /* no CPython in this process: nothing to say */
    atomic_store(&g_state, PY_OFF);
    atomic_store(&a2a_rt_py_off, true);
    return;
  }
  /* The version: Py_Version (3.11+) is a constant; before, Py_GetVersion
   * (it formats a static buffer: the same text every time). PyPy's C API
   * has other names (PyPy*), so it never gets here. */
  const unsigned long *hex = (const unsigned long *)sym("Py_Version");
  int major = 0, minor = 0;
  if (hex) {
    major = (int)(*hex >> 24);
    minor = (int)((*hex >> 16) & 0xff);
  } else {
    const char *vs = getver();
    if (vs) sscanf(vs, "%d.%d", &major, &minor);
  }
  char ver[32];
  snprintf(ver, sizeof ver, "%d.%d", major, minor);
  if (major != 3) return set_off("Python frames: off (Python %s not supported)", ver);
  if (minor <= 12) {
    /* Debug builds: the object header or internal structs may differ. */
    if (sym("_Py_RefTotal") || sym("_Py_GetRefTotal") || sym("_Py_PrintReferences"))
      return set_off("Python frames: off (CPython %s is a debug build)", ver);
    if (!a2a_rt_py_layout_builtin(minor, &g.L))
      return set_off("Python frames: off (CPython %s: no layout for this version)", ver);
  } else if (minor == 13) {
    const void *rt = sym("_PyRuntime");
    int r = rt ? a2a_rt_py_layout_from_debug(rt, 4096, &g.L) : -1;
    if (r == -2) return set_off("Python frames: off (CPython %s free-threaded build)", ver);
    if (r != 0) return set_off("Python frames: off (CPython %s: no usable _Py_DebugOffsets)", ver);
  } else {
    return set_off("Python frames: off (CPython %s: no layout for this version)", ver);
  }
  g.is_fin = (int (*)(void))sym(minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
  range_ctx c = {.addr = (uintptr_t)g.is_init};
  dl_iterate_phdr(range_cb, &c);
  g.lo = c.lo;
  g.hi = c.hi;
  snprintf(g.status, sizeof g.status, "Python frames: CPython %s", ver);
  atomic_store(&g_state, PY_READY);
}

/* Ready to read Python state? Resolves on first use; a thread that finds
 * another one resolving goes on without Python frames (never waits). */
static bool ready(void) {
  int s = atomic_load_explicit(&g_state, memory_order_acquire);
  if (s == PY_UNKNOWN) {
    int want = PY_UNKNOWN;
    if (atomic_compare_exchange_strong(&g_state, &want, PY_RESOLVING)) {
      int saved = errno;
      resolve();
      errno = saved;
    }
    s = atomic_load_explicit(&g_state, memory_order_acquire);
  }
  return s == PY_READY && atomic_load_explicit(&g_trusted, memory_order_relaxed) >= 0;
}

const char *a2a_rt_py_status(void) {
  int s = atomic_load(&g_state);
  return s == PY_READY || s == PY_OFF ? g.status : "";
}

bool a2a_rt_py_pc_in_interpreter(const void *pc) {
  return atomic_load_explicit(&g_state, memory_order_acquire) == PY_READY &&
         (uintptr_t)pc >= g.lo && (uintptr_t)pc < g.hi;
}

/* ---- reading ---- */

/* Checked reads (the first walk): EFAULT instead of a crash. */
static bool rd_checked(uintptr_t a, void *out, size_t n) {
  struct iovec l = {out, n}, r = {(void *)a, n};
  static int use_pipe;
  if (!use_pipe) {
    ssize_t k = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
    if (k == (ssize_t)n) return true;
    if (k >= 0 || errno == EFAULT) return false;
    use_pipe = 1;   /* ENOSYS, EPERM (seccomp): the pipe works everywhere */
  }
  if (g_pipe[0] < 0 && pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  if (write(g_pipe[1], (const void *)a, n) != (ssize_t)n) return false;
  return read(g_pipe[0], out, n) == (ssize_t)n;
}

typedef struct reader {
  bool checked;
  bool failed;        /* a checked read faulted or a type did not match */
} reader;

/* Inlined: on the trusted path each read is one load (n is a constant at
 * every call but the strings'). */
static inline __attribute__((always_inline)) bool rd(reader *R, uintptr_t a, void *out,
                                                     size_t n) {
  if (!a || a >> 47) {
    R->failed = true;
    return false;
  }
  if (!R->checked) {
    memcpy(out, (const void *)a, n);
    return true;
  }
  if (rd_checked(a, out, n)) return true;
  R->failed = true;
  return false;
}

static inline uintptr_t rd_ptr(reader *R, uintptr_t a) {
  uintptr_t v = 0;
  return rd(R, a, &v, sizeof v) ? v : 0;
}

static inline bool is_type(reader *R, uintptr_t obj, uintptr_t type) {
  return obj && (obj & 7) == 0 && rd_ptr(R, obj + (uintptr_t)g.L.ob_type) == type;
}

/* A str object's text as UTF-8 ("?" if it is not a compact str). */
static void rd_str(reader *R, uintptr_t obj, char *out, size_t cap) {
  snprintf(out, cap, "?");
  if (!is_type(R, obj, g.str_type)) {
    if (R->checked) R->failed = true;
    return;
  }
  uint32_t state = 0;
  int64_t len = 0;
  if (!rd(R, obj + (uintptr_t)g.L.str_state, &state, sizeof state) ||
      !rd(R, obj + (uintptr_t)g.L.str_length, &len, sizeof len))
    return;
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4) || len < 0) return;
  size_t n = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
  uint32_t buf[512];
  if (n > sizeof buf / 4) n = sizeof buf / 4;
  uintptr_t data = obj + (uintptr_t)(ascii ? g.L.str_ascii_size : g.L.str_compact_size);
  if (!rd(R, data, buf, n * kind)) return;
  a2a_rt_py_str_utf8(kind, buf, n, out, cap);
}

/* ---- frames ---- */

typedef struct frame_it {
  reader R;
  uintptr_t frame;
  int steps;
} frame_it;

static void it_init(frame_it *it, uintptr_t ts, bool checked) {
  *it = (frame_it){.R = {.checked = checked}};
  uintptr_t p = rd_ptr(&it->R, ts + (uintptr_t)g.L.ts_frame);
  if (p && g.L.cframe_current >= 0) p = rd_ptr(&it->R, p + (uintptr_t)g.L.cframe_current);
  it->frame = p;
}

/* The next frame with a code object (innermost first): its code and the
 * byte offset of its current instruction. */
static bool it_next(frame_it *it, uintptr_t *code, int *off) {
  const a2a_rt_py_layout *L = &g.L;
  while (it->frame && it->steps++ < 1024 && !it->R.failed) {
    uintptr_t f = it->frame;
    it->frame = rd_ptr(&it->R, f + (uintptr_t)L->fr_back);
    if (L->fr_owner >= 0) {
      unsigned char owner = 0;
      if (!rd(&it->R, f + (uintptr_t)L->fr_owner, &owner, 1)) return false;
      if ((int)owner == L->owner_cstack) continue;
    }
    uintptr_t c = rd_ptr(&it->R, f + (uintptr_t)L->fr_code);
    if (!is_type(&it->R, c, g.code_type)) {
      if (L->minor >= 13 && c == g.none) continue;   /* f_executable may be None */
      it->R.failed = true;
      return false;
    }
    if (L->frame_objects) {
      int lasti = 0;
      if (!rd(&it->R, f + (uintptr_t)L->fr_instr, &lasti, sizeof lasti)) return false;
      *off = lasti * L->instr_scale;
    } else {
      uintptr_t ip = rd_ptr(&it->R, f + (uintptr_t)L->fr_instr);
      intptr_t d = (intptr_t)(ip - (c + (uintptr_t)L->co_code));
      *off = d < -2 || d > (1 << 26) ? -1 : (int)d;
    }
    *code = c;
    return true;
  }
  return false;
}

/* ---- the interned frames ---- */

#define PY_SLOTS 8192          /* power of two, twice the entries */
#define PY_ENTRIES 4095        /* fits the handles' 12-bit index + 1 */
#define PY_NOIDX 0xffffffffu

typedef struct pyent {
  char text[A2A_RT_FRAME_LEN];
  char func[64];
  char lib[32];
  unsigned char cls;
} pyent;

static struct {
  _Atomic uint64_t key;
  _Atomic uint32_t ent;        /* 0: being written; else index + 1 */
} g_slots[PY_SLOTS];
static pyent g_ents[PY_ENTRIES];
static _Atomic uint32_t g_nents;

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static void render(reader *R, uintptr_t code, uintptr_t file, uintptr_t name, int off,
                   pyent *e) {
  char path[512], func[128];
  rd_str(R, file, path, sizeof path);
  rd_str(R, name, func, sizeof func);
  int line = R->failed ? 0 : g.addr2line((void *)code, off < 0 ? -1 : off);
  e->cls = (unsigned char)a2a_rt_py_classify(path, e->lib, sizeof e->lib);
  snprintf(e->func, sizeof e->func, "%.63s", func);
  a2a_rt_py_frame_text(e->text, sizeof e->text, func, path, line);
}

/* The entry of (code, off): its index, or PY_NOIDX (table full, or being
 * written by another thread) with *tmp rendered here. *cls gets its class. */
static uint32_t intern(reader *R, uintptr_t code, int off, pyent *tmp, int *cls) {
  const a2a_rt_py_layout *L = &g.L;
  uintptr_t file = rd_ptr(R, code + (uintptr_t)L->co_filename);
  uintptr_t name = rd_ptr(R, code + (uintptr_t)(L->co_qualname >= 0 ? L->co_qualname : L->co_name));
  int first = 0;
  rd(R, code + (uintptr_t)L->co_firstlineno, &first, sizeof first);
  if (R->failed) return PY_NOIDX;
  uint64_t key = mix(mix(mix(mix(mix(0, code), file), name), (uint64_t)(uint32_t)first),
                     (uint64_t)(uint32_t)off) | 1;
  size_t h = (size_t)(key >> 17) & (PY_SLOTS - 1);
  for (int probe = 0; probe < 64; probe++, h = (h + 1) & (PY_SLOTS - 1)) {
    uint64_t k = atomic_load_explicit(&g_slots[h].key, memory_order_acquire);
    if (k == 0) {
      if (!atomic_compare_exchange_strong(&g_slots[h].key, &k, key)) {
        if (k != key) continue;   /* another frame took the slot */
      } else {
        uint32_t idx = atomic_fetch_add(&g_nents, 1);
        if (idx >= PY_ENTRIES) break;   /* full: the slot stays unwritten */
        render(R, code, file, name, off, &g_ents[idx]);
        if (R->failed) break;
        atomic_store_explicit(&g_slots[h].ent, idx + 1, memory_order_release);
        *cls = g_ents[idx].cls;
        return idx;
      }
    }
    if (k == key) {
      uint32_t e = atomic_load_explicit(&g_slots[h].ent, memory_order_acquire);
      if (!e) break;   /* being written (or the table was full) */
      *cls = g_ents[e - 1].cls;
      return e - 1;
    }
  }
  render(R, code, file, name, off, tmp);
  *cls = tmp->cls;
  return PY_NOIDX;
}

/* ---- a walk ---- */

/* This thread's state, or 0. */
static uintptr_t this_tstate(void) {
  if (!ready()) return 0;
  if (!g.is_init() || (g.is_fin && g.is_fin())) return 0;
  return (uintptr_t)g.tstate();
}

typedef struct walked {
  uint32_t idx;
  unsigned char cls;
} walked;

/* Walk this thread's frames into w[0..max) (innermost first); stop after
 * the first user frame when stop_at_user. Returns the count, -1 if there
 * is no Python state or the layout is refused. Takes the checked path
 * until the layout is trusted. */
static int walk(uintptr_t ts, walked *w, int max, bool stop_at_user) {
  bool checked = atomic_load_explicit(&g_trusted, memory_order_acquire) == 0;
  if (checked && pthread_mutex_trylock(&g_vmu) != 0) return -1;   /* another thread checks */
  if (checked && atomic_load(&g_trusted) != 0) {                  /* decided meanwhile */
    pthread_mutex_unlock(&g_vmu);
    checked = false;
    if (atomic_load(&g_trusted) < 0) return -1;
  }
  frame_it it;
  it_init(&it, ts, checked);
  int n = 0;
  uintptr_t code;
  int off;
  pyent tmp;
  bool done = false;
  while (it_next(&it, &code, &off)) {
    if (done || n >= max) {
      if (!checked) break;
      continue;   /* the checked walk follows the whole chain */
    }
    int cls = A2A_PY_USER;
    uint32_t idx = intern(&it.R, code, off, &tmp, &cls);
    if (it.R.failed) break;
    w[n++] = (walked){.idx = idx, .cls = (unsigned char)cls};
    if (stop_at_user && cls == A2A_PY_USER) done = true;
  }
  if (checked) {
    if (it.R.failed) {
      snprintf(g.status, sizeof g.status,
               "Python frames: off (CPython 3.%d: this interpreter's memory does not have "
               "the expected layout)", g.L.minor);
      atomic_store(&g_trusted, -1);
      a2a_rt_stderr("warning: %s; findings show native frames only", g.status);
    } else if (n > 0) {
      atomic_store(&g_trusted, 1);
    }
    pthread_mutex_unlock(&g_vmu);
  }
  return it.R.failed ? -1 : n;
}

/* ---- handles ---- */

enum { H_SITE = 1, H_FRAME = 2, H_FOLD = 3, H_NATIVE = 4 };
#define H_TAG (1ull << 63)
#define H_KIND(v) ((unsigned)(((v) >> 60) & 7))
#define PC_MAX (1ull << 48)

static void *mk(unsigned kind, uint64_t payload) {
  return (void *)(uintptr_t)(H_TAG | (uint64_t)kind << 60 | payload);
}

void *a2a_rt_py_native(void *pc) {
  return (uintptr_t)pc < PC_MAX ? mk(H_NATIVE, (uintptr_t)pc) : pc;
}

static void classes(const walked *w, int n, unsigned char *cls, bool *rec) {
  for (int i = 0; i < n; i++) {
    cls[i] = w[i].cls;
    rec[i] = w[i].idx != PY_NOIDX;
  }
}

/* The walk, out of line: its frame (three 64-entry arrays) is set up only
 * for a thread that has Python state, not on every NCCL call of a process
 * without Python. */
__attribute__((noinline)) static const void *py_site_walk(uintptr_t ts, const void *pc) {
  int saved = errno;
  walked w[64];
  int n = walk(ts, w, 64, true);
  errno = saved;
  if (n <= 0) return pc;
  unsigned char cls[64];
  bool rec[64];
  classes(w, n, cls, rec);
  int pick = a2a_rt_py_anchor(cls, rec, n);
  if (pick < 0) return pc;
  return mk(H_SITE, (uint64_t)(w[pick].idx + 1) << 48 | (uintptr_t)pc);
}

const void *a2a_rt_py_site_slow(const void *pc) {
  uintptr_t ts = this_tstate();
  if (!ts || (uintptr_t)pc >= PC_MAX) return pc;
  return py_site_walk(ts, pc);
}

/* A fold of the frames w[a..b): its count and up to two of its libraries
 * (the first is the innermost frame's, which a leading run also names by
 * its function). */
static void *fold(const walked *w, int a, int b, bool leading) {
  uint64_t count = (uint64_t)(b - a) > 1023 ? 1023 : (uint64_t)(b - a);
  uint32_t first = PY_NOIDX, second = PY_NOIDX;
  int nlibs = 0;
  for (int i = a; i < b; i++) {
    if (w[i].idx == PY_NOIDX) continue;
    const char *lib = g_ents[w[i].idx].lib;
    bool seen = false;
    for (int j = a; j < i && !seen; j++)
      if (w[j].idx != PY_NOIDX && strcmp(g_ents[w[j].idx].lib, lib) == 0) seen = true;
    if (seen) continue;
    if (nlibs == 0) first = w[i].idx;
    else if (nlibs == 1) second = w[i].idx;
    nlibs++;
  }
  uint64_t p = count | (uint64_t)(first == PY_NOIDX ? 0 : first + 1) << 10 |
               (uint64_t)(second == PY_NOIDX ? 0 : second + 1) << 22 |
               (uint64_t)(nlibs > 63 ? 63 : nlibs) << 34 | (uint64_t)leading << 40;
  return mk(H_FOLD, p);
}

int a2a_rt_py_capture(void **out, int max, bool *python_seen) {
  *python_seen = false;
  uintptr_t ts = this_tstate();
  if (!ts || max <= 0) return 0;
  int saved = errno;
  walked w[256];
  int n = walk(ts, w, 256, false);
  errno = saved;
  if (n <= 0) return 0;
  *python_seen = true;
  unsigned char cls[256];
  bool rec[256];
  classes(w, n, cls, rec);
  a2a_rt_py_item plan[32];
  int np = a2a_rt_py_plan(cls, rec, n, plan, max < 32 ? max : 32);
  for (int i = 0; i < np; i++)
    out[i] = plan[i].kind == A2A_PY_ITEM_FRAME
                 ? mk(H_FRAME, w[plan[i].a].idx)
                 : fold(w, plan[i].a, plan[i].b, plan[i].kind == A2A_PY_ITEM_LEADING);
  return np;
}

/* ---- rendering ---- */

static const pyent *ent(uint64_t idx1) {
  return idx1 && idx1 <= PY_ENTRIES && idx1 <= atomic_load(&g_nents) ? &g_ents[idx1 - 1] : NULL;
}

int a2a_rt_py_render(const void *h, char (*out)[A2A_RT_FRAME_LEN], int max) {
  uint64_t v = (uintptr_t)h;
  if (max <= 0) return 0;
  switch (H_KIND(v)) {
  case H_SITE: {
    const pyent *e = ent((v >> 48) & 0xfff);
    snprintf(out[0], A2A_RT_FRAME_LEN, "%s", e ? e->text : "?? (Python frame)");
    return 1 + a2a_rt_symbolize_native((const void *)(uintptr_t)(v & (PC_MAX - 1)), out + 1,
                                       max - 1, false);
  }
  case H_FRAME: {
    const pyent *e = ent((v & 0xfff) + 1);
    snprintf(out[0], A2A_RT_FRAME_LEN, "%s", e ? e->text : "?? (Python frame)");
    return 1;
  }
  case H_FOLD: {
    const pyent *a = ent((v >> 10) & 0xfff), *b = ent((v >> 22) & 0xfff);
    bool leading = (v >> 40) & 1;
    a2a_rt_py_fold_text(out[0], A2A_RT_FRAME_LEN, (int)(v & 1023), a ? a->lib : "unrecorded",
                        b ? b->lib : NULL, (int)((v >> 34) & 63),
                        leading && a ? a->func : NULL);
    return 1;
  }
  case H_NATIVE:
    return a2a_rt_symbolize_native((const void *)(uintptr_t)(v & (PC_MAX - 1)), out, max, true);
  default:
    snprintf(out[0], A2A_RT_FRAME_LEN, "?? (handle 0x%llx)", (unsigned long long)v);
    return 1;
  }
}
