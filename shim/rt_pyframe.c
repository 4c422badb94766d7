/* rt_pyframe.c (pure) - the parts of Python call sites (shim/rt_python.c)
 * that need no process: where CPython keeps a thread's frames, per version;
 * which frames are library code and how a run of them is folded into one
 * line; how a Python frame is written; and the shortener of demangled C++
 * names used by the native symbolizer (shim/rt_stack.c). No globals, no
 * system calls: tests/unit/test_pyframe.c compiles it in, and
 * tests/py/layout_check.c compares the layouts with each installed
 * CPython's own headers.
 *
 * Frame text: "func (path:line)" - one of the forms the report tool parses
 * as a Python frame (docs/report.md, "Stack frames"). A folded run is
 * "... N frames in torch" (no location, so the report never takes it for a
 * call site).
 */
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

/* ---- interpreter layouts ---- */

/* Byte offsets read from each version's headers (Include/cpython/pystate.h,
 * frameobject.h, code.h, unicodeobject.h, internal/pycore_frame.h) for the
 * default build on 64-bit Linux: PyObject is {ob_refcnt, ob_type}. The
 * layouts do not change within a minor version (extensions compiled against
 * x.y.0, Cython's among them, read these structs directly). */
bool a2a_rt_py_layout_builtin(int minor, a2a_rt_py_layout *L) {
  memset(L, 0, sizeof *L);
  L->minor = minor;
  L->ob_type = 8;
  L->str_length = 16;
  L->str_state = 32;
  L->fr_owner = -1;
  L->owner_cstack = -1;
  L->co_qualname = -1;
  switch (minor) {
  case 9:
  case 10:
    /* PyThreadState.frame -> PyFrameObject {f_back, f_code, ..., f_lasti}.
     * f_lasti counts bytes in 3.9, code units (2 bytes) in 3.10. */
    L->frame_objects = true;
    L->ts_frame = 24;
    L->cframe_current = -1;
    L->fr_back = 24;
    L->fr_code = 32;
    L->fr_instr = minor == 9 ? 104 : 96;
    L->instr_scale = minor == 9 ? 1 : 2;
    L->co_filename = 104;
    L->co_name = 112;
    L->co_firstlineno = 40;
    L->str_ascii_size = 48;
    L->str_compact_size = 72;
    return true;
  case 11:
    /* PyThreadState.cframe -> _PyCFrame.current_frame -> _PyInterpreterFrame
     * {f_func, f_globals, f_builtins, f_locals, f_code, frame_obj, previous,
     * prev_instr, stacktop, is_entry, owner}. */
    L->ts_frame = 56;
    L->cframe_current = 8;
    L->fr_back = 48;
    L->fr_code = 32;
    L->fr_instr = 56;
    L->fr_owner = 69;
    L->co_filename = 112;
    L->co_name = 120;
    L->co_qualname = 128;
    L->co_firstlineno = 72;
    L->co_code = 184;
    L->str_ascii_size = 48;
    L->str_compact_size = 72;
    return true;
  case 12:
    /* As 3.11, frames reordered {f_code, previous, ...}; entry frames of C
     * calls are owned by the C stack (FRAME_OWNED_BY_CSTACK) and skipped;
     * PyASCIIObject lost wstr. */
    L->ts_frame = 56;
    L->cframe_current = 0;
    L->fr_back = 8;
    L->fr_code = 0;
    L->fr_instr = 56;
    L->fr_owner = 70;
    L->owner_cstack = 3;
    L->co_filename = 112;
    L->co_name = 120;
    L->co_qualname = 128;
    L->co_firstlineno = 68;
    L->co_code = 192;
    L->str_ascii_size = 40;
    L->str_compact_size = 56;
    return true;
  default:
    return false;
  }
}

/* 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), the first
 * member of _PyRuntime, published for debuggers: byte positions of the
 * fields used here inside that struct, which is stable within 3.13. */
enum {
  DBG_VERSION = 8,
  DBG_FREE_THREADED = 16,
  DBG_TS_CURRENT_FRAME = 184,
  DBG_FR_PREVIOUS = 232,
  DBG_FR_EXECUTABLE = 240,
  DBG_FR_INSTR_PTR = 248,
  DBG_FR_OWNER = 264,
  DBG_CO_FILENAME = 280,
  DBG_CO_NAME = 288,
  DBG_CO_QUALNAME = 296,
  DBG_CO_FIRSTLINENO = 312,
  DBG_CO_CODE_ADAPTIVE = 344,
  DBG_OB_TYPE = 360,
  DBG_STR_STATE = 544,
  DBG_STR_LENGTH = 552,
  DBG_STR_ASCII_SIZE = 560,
  DBG_END = 584,
};

static uint64_t dbg_u64(const unsigned char *d, int at) {
  uint64_t v;
  memcpy(&v, d + at, sizeof v);
  return v;
}

int a2a_rt_py_layout_from_debug(const void *debug, size_t n, a2a_rt_py_layout *L) {
  const unsigned char *d = debug;
  memset(L, 0, sizeof *L);
  if (n < DBG_END || memcmp(d, "xdebugpy", 8) != 0) return -1;
  uint64_t ver = dbg_u64(d, DBG_VERSION);   /* PY_VERSION_HEX */
  if ((ver >> 24) != 3 || ((ver >> 16) & 0xff) != 13) return -1;
  if (dbg_u64(d, DBG_FREE_THREADED)) return -2;
  static const int at[] = {DBG_TS_CURRENT_FRAME, DBG_FR_PREVIOUS, DBG_FR_EXECUTABLE,
                           DBG_FR_INSTR_PTR, DBG_FR_OWNER, DBG_CO_FILENAME, DBG_CO_NAME,
                           DBG_CO_QUALNAME, DBG_CO_FIRSTLINENO, DBG_CO_CODE_ADAPTIVE,
                           DBG_OB_TYPE, DBG_STR_STATE, DBG_STR_LENGTH, DBG_STR_ASCII_SIZE};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
    if (dbg_u64(d, at[i]) >= 4096) return -1;   /* offsets inside small structs */
  L->minor = 13;
  L->ts_frame = (int)dbg_u64(d, DBG_TS_CURRENT_FRAME);
  L->cframe_current = -1;
  L->fr_back = (int)dbg_u64(d, DBG_FR_PREVIOUS);
  L->fr_code = (int)dbg_u64(d, DBG_FR_EXECUTABLE);
  L->fr_instr = (int)dbg_u64(d, DBG_FR_INSTR_PTR);
  L->fr_owner = (int)dbg_u64(d, DBG_FR_OWNER);
  L->owner_cstack = 3;               /* FRAME_OWNED_BY_CSTACK in 3.13 */
  L->co_filename = (int)dbg_u64(d, DBG_CO_FILENAME);
  L->co_name = (int)dbg_u64(d, DBG_CO_NAME);
  L->co_qualname = (int)dbg_u64(d, DBG_CO_QUALNAME);
  L->co_firstlineno = (int)dbg_u64(d, DBG_CO_FIRSTLINENO);
  L->co_code = (int)dbg_u64(d, DBG_CO_CODE_ADAPTIVE);
  L->ob_type = (int)dbg_u64(d, DBG_OB_TYPE);
  L->str_state = (int)dbg_u64(d, DBG_STR_STATE);
  L->str_length = (int)dbg_u64(d, DBG_STR_LENGTH);
  L->str_ascii_size = (int)dbg_u64(d, DBG_STR_ASCII_SIZE);
  /* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (3.12+). */
  L->str_compact_size = L->str_ascii_size + 16;
  return 0;
}

/* ---- strings ---- */

size_t a2a_rt_py_str_utf8(unsigned kind, const void *data, size_t len, char *out, size_t cap) {
  size_t o = 0;
  if (!cap) return 0;
  for (size_t i = 0; i < len; i++) {
    uint32_t c = kind == 1   ? ((const uint8_t *)data)[i]
                 : kind == 2 ? ((const uint16_t *)data)[i]
                             : ((const uint32_t *)data)[i];
    char b[4];
    size_t k;
    if (c < 0x80) b[0] = (char)c, k = 1;
    else if (c < 0x800) b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f)), k = 2;
    else if (c < 0x10000 && (c < 0xd800 || c > 0xdfff))
      b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3f)),
      b[2] = (char)(0x80 | (c & 0x3f)), k = 3;
    else if (c >= 0x10000 && c < 0x110000)
      b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3f)),
      b[2] = (char)(0x80 | ((c >> 6) & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f)), k = 4;
    else b[0] = '?', k = 1;   /* lone surrogate */
    if (o + k >= cap) break;
    memcpy(out + o, b, k);
    o += k;
  }
  out[o] = 0;
  return o;
}

/* ---- library or user code ---- */

static const char *last_str(const char *s, const char *needle) {
  const char *r = NULL;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) r = p;
  return r;
}

/* Copy the path component at p (up to '/' or the end) into lib, without a
 * module suffix ("six.py" -> "six", "_cffi.cpython-311-x86_64.so" -> "_cffi"). */
static void component(const char *p, char *lib, size_t cap) {
  size_t n = strcspn(p, "/");
  size_t dot = strcspn(p, ".");
  if (dot < n) n = dot;
  if (n >= cap) n = cap - 1;
  memcpy(lib, p, n);
  lib[n] = 0;
}

/* torch's own packages and modules, for a torch that is not installed under
 * site-packages (a source checkout, `pip install -e`): "/torch/" followed by
 * one of these. A user directory that happens to be called torch/ holds
 * none of them. */
static const char *const k_torch_parts[] = {
    "distributed/", "nn/", "cuda/", "utils/", "autograd/", "_dynamo/", "_inductor/",
    "_functorch/", "fx/", "amp/", "optim/", "_tensor.py", "functional.py", "_ops.py",
    "overrides.py", "_jit_internal.py", "serialization.py", "__init__.py"};

int a2a_rt_py_classify(const char *path, char *lib, size_t cap) {
  if (cap) lib[0] = 0;
  if (!path || !*path) return A2A_PY_USER;
  if (strncmp(path, "<frozen ", 8) == 0) {
    snprintf(lib, cap, "stdlib");
    return A2A_PY_STDLIB;
  }
  if (path[0] == '<') return A2A_PY_USER;   /* <string>, <stdin>, <ipython-input-...> */
  const char *sp = last_str(path, "/site-packages/");
  const char *dp = last_str(path, "/dist-packages/");
  if (dp > sp) sp = dp;
  if (sp) {
    component(sp + 15, lib, cap);
    if (!lib[0]) snprintf(lib, cap, "site-packages");
    return A2A_PY_LIB;
  }
  for (const char *t = strstr(path, "/torch/"); t; t = strstr(t + 1, "/torch/"))
    for (size_t i = 0; i < sizeof k_torch_parts / sizeof k_torch_parts[0]; i++)
      if (strncmp(t + 7, k_torch_parts[i], strlen(k_torch_parts[i])) == 0) {
        snprintf(lib, cap, "torch");
        return A2A_PY_LIB;
      }
  /* The standard library: .../lib/python3.N/ (or lib64). */
  for (const char *p = strstr(path, "/python3."); p; p = strstr(p + 1, "/python3.")) {
    if (!(p - path >= 4 && strncmp(p - 4, "/lib", 4) == 0) &&
        !(p - path >= 6 && strncmp(p - 6, "/lib64", 6) == 0))
      continue;
    const char *q = p + 9;
    if (*q < '0' || *q > '9') continue;
    while (*q >= '0' && *q <= '9') q++;
    if (*q == 't') q++;   /* free-threaded: python3.13t */
    if (*q == '/') {
      snprintf(lib, cap, "stdlib");
      return A2A_PY_STDLIB;
    }
  }
  return A2A_PY_USER;
}

/* ---- the frames a stack shows ---- */

int a2a_rt_py_anchor(const unsigned char *cls, const bool *recorded, int n) {
  for (int i = 0; i < n; i++)
    if (cls[i] == A2A_PY_USER && recorded[i]) return i;
  for (int i = 0; i < n; i++)
    if (cls[i] != A2A_PY_STDLIB && recorded[i]) return i;
  for (int i = 0; i < n; i++)
    if (recorded[i]) return i;
  return -1;
}

int a2a_rt_py_plan(const unsigned char *cls, const bool *recorded, int n, a2a_rt_py_item *out,
                   int max) {
  int u = a2a_rt_py_anchor(cls, recorded, n);
  if (u < 0) u = 0;
  int k = 0;
  /* The anchor and its callers outwards; a run of library (or unrecorded)
   * frames between user frames is one fold. */
  for (int i = u; i < n && k < max;) {
    if (i == u || (cls[i] == A2A_PY_USER && recorded[i])) {
      out[k++] = recorded[i] ? (a2a_rt_py_item){.kind = A2A_PY_ITEM_FRAME, .a = i, .b = i + 1}
                             : (a2a_rt_py_item){.kind = A2A_PY_ITEM_FOLD, .a = i, .b = i + 1};
      i++;
      continue;
    }
    int j = i;
    while (j < n && !(cls[j] == A2A_PY_USER && recorded[j])) j++;
    out[k++] = (a2a_rt_py_item){.kind = A2A_PY_ITEM_FOLD, .a = i, .b = j};
    i = j;
  }
  /* Then what the anchor called into: the frames inside it, one fold. */
  if (u > 0 && k < max) out[k++] = (a2a_rt_py_item){.kind = A2A_PY_ITEM_LEADING, .a = 0, .b = u};
  return k;
}

/* ---- text ---- */

/* Keep the end of a path that does not fit: ".../b/c.py". */
static void put_path(char *out, size_t cap, const char *path) {
  size_t n = strlen(path);
  if (n < cap) {
    memcpy(out, path, n + 1);
    return;
  }
  if (cap < 8) {
    if (cap) out[0] = 0;
    return;
  }
  const char *tail = path + n - (cap - 5);
  const char *slash = strchr(tail, '/');
  if (slash && slash[1]) tail = slash;
  snprintf(out, cap, "...%s%s", *tail == '/' ? "" : "/", tail);
}

size_t a2a_rt_py_frame_text(char *out, size_t cap, const char *func, const char *file,
                            int line) {
  if (!cap) return 0;
  char fn[72], loc[16];
  const char *f = func && *func ? func : "??";
  if (strlen(f) >= sizeof fn) {
    memcpy(fn, f, sizeof fn - 4);
    memcpy(fn + sizeof fn - 4, "...", 4);
  } else {
    snprintf(fn, sizeof fn, "%s", f);
  }
  snprintf(loc, sizeof loc, ":%d)", line > 0 ? line : 0);
  size_t fixed = strlen(fn) + 2 + strlen(loc);   /* "fn (" ... ":N)" */
  char path[A2A_RT_FRAME_LEN];
  put_path(path, cap > fixed + 8 ? cap - fixed : 8, file && *file ? file : "?");
  int n = snprintf(out, cap, "%s (%s%s", fn, path, loc);
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static int atoi_pos(const char *s) {
  long v = 0;
  for (; *s >= '0' && *s <= '9'; s++)
    if (v < 100000000) v = v * 10 + (*s - '0');
  return (int)v;
}

void a2a_rt_py_fit(const char *frame, char *out, size_t cap) {
  if (!cap) return;
  size_t n = strlen(frame);
  if (n < cap) {
    memcpy(out, frame, n + 1);
    return;
  }
  /* "func (path:line)": shorten the path, keep the line. */
  const char *open = strrchr(frame, '(');
  const char *colon = strrchr(frame, ':');
  if (open && open > frame && open[-1] == ' ' && colon && colon > open && frame[n - 1] == ')' &&
      strspn(colon + 1, "0123456789") == (size_t)(frame + n - 1 - colon - 1)) {
    char func[A2A_RT_FRAME_LEN], path[1024];
    size_t fl = (size_t)(open - 1 - frame), pl = (size_t)(colon - open - 1);
    if (fl < sizeof func && pl < sizeof path) {
      memcpy(func, frame, fl);
      func[fl] = 0;
      memcpy(path, open + 1, pl);
      path[pl] = 0;
      a2a_rt_py_frame_text(out, cap, func, path, atoi_pos(colon + 1));
      return;
    }
  }
  /* A native frame "name+0xoff (module)[ at file:line]": shorten the name
   * (a C++ one loses its parameter list first: a2a_rt_cxx_shorten), keep
   * the rest - where the call is, not how its parameters are typed. */
  const char *plus = NULL;
  for (const char *p = strstr(frame, "+0x"); p; p = strstr(p + 1, "+0x")) plus = p;
  if (plus && plus > frame && cap > 48 && strlen(plus) + 24 < cap) {
    char name[A2A_RT_FRAME_LEN];
    size_t nl = (size_t)(plus - frame);
    if (nl < sizeof name) {
      memcpy(name, frame, nl);
      name[nl] = 0;
      a2a_rt_cxx_shorten(name, cap - 1 - strlen(plus));
      snprintf(out, cap, "%s%s", name, plus);
      return;
    }
  }
  memcpy(out, frame, cap - 4 > 0 ? cap - 4 : 0);
  memcpy(out + cap - 4, "...", 4);
}

size_t a2a_rt_py_fold_text(char *out, size_t cap, int count, const char *lib1,
                           const char *lib2, int nlibs, const char *innermost) {
  if (!cap) return 0;
  char libs[112];
  const char *a = lib1 && *lib1 ? lib1 : "libraries";
  if (nlibs >= 3 && lib2 && *lib2)
    snprintf(libs, sizeof libs, "%.40s, %.40s and %d more", a, lib2, nlibs - 2);
  else if (nlibs == 2 && lib2 && *lib2)
    snprintf(libs, sizeof libs, "%.40s, %.40s", a, lib2);
  else
    snprintf(libs, sizeof libs, "%.40s", a);
  int n;
  if (innermost && *innermost)
    n = snprintf(out, cap, "... %d frame%s in %s, innermost %.80s", count, count == 1 ? "" : "s",
                 libs, innermost);
  else
    n = snprintf(out, cap, "... %d frame%s in %s", count, count == 1 ? "" : "s", libs);
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* ---- demangled C++ names ---- */

const char *a2a_rt_cxx_demangle(a2a_rt_demangle_fn dm, const char *name, char **buf,
                                size_t *len) {
  if (!name || name[0] != '_' || name[1] != 'Z' || !dm) return name;   /* C, or no C++ runtime */
  int status = -1;
  size_t n = *len;
  char *r = dm(name, *buf, &n, &status);
  /* __cxa_demangle grows the buffer (or frees it and returns a new one):
   * keep whatever it returned as the buffer of the next call. */
  if (r) {
    *buf = r;
    *len = n;
  }
  return status == 0 && r ? r : name;
}

/* Strip trailing " const", " volatile", " &", " &&", " [clone .cold]" and
 * similar qualifiers of a demangled function name. */
static size_t strip_quals(const char *s, size_t n) {
  static const char *const q[] = {" const", " volatile", " &&", " &", " noexcept"};
  for (bool again = true; again;) {
    again = false;
    while (n && s[n - 1] == ' ') n--;
    if (n && s[n - 1] == ']') {   /* " [clone .cold]" */
      size_t o = n;
      while (o > 0 && s[o - 1] != '[') o--;
      if (o >= 2 && s[o - 2] == ' ') {
        n = o - 2;
        again = true;
        continue;
      }
    }
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
      size_t k = strlen(q[i]);
      if (n > k && memcmp(s + n - k, q[i], k) == 0) {
        n -= k;
        again = true;
      }
    }
  }
  return n;
}

/* Replace the contents of every outermost <...> with "..." (not the '<' of
 * operator<, operator<<, operator<=, operator->). */
static void collapse_templates(char *s) {
  char out[4096];
  size_t o = 0, n = strlen(s);
  for (size_t i = 0; i < n && o < sizeof out - 6;) {
    bool op = i >= 8 && memcmp(s + i - 8, "operator", 8) == 0;
    if (s[i] == '<' && !op) {
      int depth = 0;
      size_t j = i;
      for (; j < n; j++) {
        if (s[j] == '<') depth++;
        else if (s[j] == '>' && --depth == 0) break;
      }
      if (j < n) {
        memcpy(out + o, "<...>", 5);
        o += 5;
        i = j + 1;
        continue;
      }
    }
    out[o++] = s[i++];
  }
  out[o] = 0;
  memcpy(s, out, o + 1);
}

void a2a_rt_cxx_shorten(char *s, size_t budget) {
  size_t n = strlen(s);
  if (n <= budget || budget < 8) {
    if (budget >= 4 && n > budget) memcpy(s + budget - 3, "...", 4);
    return;
  }
  /* 1. The parameter list of the function (its last top-level "(...)"). */
  size_t e = strip_quals(s, n);
  if (e && s[e - 1] == ')') {
    int depth = 0;
    size_t o = e;
    while (o-- > 0) {
      if (s[o] == ')') depth++;
      else if (s[o] == '(' && --depth == 0) break;
    }
    /* "operator()" keeps its own parentheses: strip only what follows. */
    if (depth == 0 && o > 0 && o < e) s[o] = 0;
  }
  if (strlen(s) <= budget) return;
  /* 2. Template arguments. */
  if (strlen(s) < 4096) collapse_templates(s);
  n = strlen(s);
  /* 3. Whatever is left: cut, marked. */
  if (n > budget) memcpy(s + budget - 3, "...", 4);
}

bool a2a_rt_cxx_in_namespace(const char *s, const char *ns) {
  /* The qualified name starts at the beginning or after the return type
   * ("c10::intrusive_ptr<...> pybind11::detail::f<...>(...)"): a space
   * outside any <...>, before the parameter list. */
  size_t k = strlen(ns);
  int depth = 0;
  for (const char *p = s; *p; p++) {
    if (depth == 0 && (p == s || p[-1] == ' ') && strncmp(p, ns, k) == 0) return true;
    if (*p == '<') depth++;
    else if (*p == '>' && depth > 0) depth--;
    else if (*p == '(' && depth == 0) {
      if (strncmp(p, "(anonymous namespace)", 21) != 0) break;   /* the parameters */
      p += 20;
    }
  }
  return false;
}
