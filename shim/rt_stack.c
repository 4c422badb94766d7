/* rt_stack.c - call stacks for findings: capture with libunwind, symbolize
 * at write time.
 *
 * Capture (any thread, no lock of ours, no allocation): libunwind's step
 * walk into a local array, then drop the leading frames that lie inside liba2acheck.so
 * (the report path, the analyzer, the wrapper), so frame #0 is the return
 * address into the application's function that made the NCCL/CUDA call.
 * On a thread that runs Python the stack starts with its Python frames
 * (handles from rt_python.c: the innermost user frame first, library runs
 * folded), followed by the native frames up to the interpreter.
 *
 * Symbolization (under a2a_rt_mu, only when a finding is written): dladdr()
 * names exported functions; for the rest (static functions, executables
 * not linked with -rdynamic) the object's ELF .symtab is read from its file
 * (mmap'ed once per object, cached), which names every function of a binary
 * that was not stripped. When the file also has DWARF line tables (-g),
 * rt_dwarf.c adds the source position. C++ names are demangled with the
 * process's own __cxa_demangle when libstdc++ is loaded (else they stay
 * mangled) and shortened to fit a frame (parameter list, then template
 * arguments). Frames print as "func+0xoff (module)" or "func+0xoff
 * (module) at file.c:line"; handles render through rt_python.c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "rt_internal.h"

/* ---- our own text range ---- */

static uintptr_t g_self_lo, g_self_hi;
static pthread_once_t g_self_once = PTHREAD_ONCE_INIT;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
  uintptr_t me = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (me >= lo && me < hi) {
      /* The whole object: every PT_LOAD segment. */
      uintptr_t olo = UINTPTR_MAX, ohi = 0;
      for (int j = 0; j < info->dlpi_phnum; j++) {
        const ElfW(Phdr) *q = &info->dlpi_phdr[j];
        if (q->p_type != PT_LOAD) continue;
        uintptr_t a = info->dlpi_addr + q->p_vaddr;
        if (a < olo) olo = a;
        if (a + q->p_memsz > ohi) ohi = a + q->p_memsz;
      }
      g_self_lo = olo;
      g_self_hi = ohi;
      return 1;
    }
  }
  return 0;
}

static void self_once(void) { dl_iterate_phdr(find_self, (void *)(uintptr_t)&a2a_rt_pc_is_ours); }

bool a2a_rt_pc_is_ours(const void *pc) {
  /* Once: threads racing to compute the same range wrote it unordered (a
   * data race ThreadSanitizer reports). */
  pthread_once(&g_self_once, self_once);
  return (uintptr_t)pc >= g_self_lo && (uintptr_t)pc < g_self_hi;
}

/* The return addresses of the calling thread's frames, the caller of this
 * function first. Walks with unw_step rather than unw_backtrace: libunwind's
 * fast tracer keeps a 256 KiB frame cache per thread behind a pthread key
 * whose destructor re-arms itself for every destructor round, so it runs
 * after a sanitizer runtime (ThreadSanitizer) has torn the thread down and
 * crashes there; it also costs every thread that ever captured. The step
 * walk uses the address space's global caches only. A capture happens once
 * per call site and per finding, never per call, so the slower walk does
 * not reach the hot path. */
static pthread_once_t g_unw_once = PTHREAD_ONCE_INIT;
/* libunwind initializes itself on first use from every thread that gets
 * there first, writing a global signal mask without a lock (a data race
 * ThreadSanitizer reports in libunwind.so when two threads capture their
 * first stacks together); one cursor made once, before any other, does that
 * initialization alone. */
static void unw_once(void) {
  unw_context_t uc;
  unw_cursor_t c;
  if (unw_getcontext(&uc) == 0) (void)unw_init_local(&c, &uc);
}

static int __attribute__((noinline)) unwind_pcs(void **pcs, int max) {
  unw_context_t uc;
  unw_cursor_t c;
  pthread_once(&g_unw_once, unw_once);
  if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0) return 0;
  int n = 0;
  while (n < max && unw_step(&c) > 0) {
    unw_word_t ip;
    if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    pcs[n++] = (void *)(uintptr_t)ip;
  }
  return n;
}

void a2a_rt_capture_stack(a2a_stack *st) {
  void *pcs[64];
  int n = unwind_pcs(pcs, 64);
  int skip = 0;
  while (skip < n && a2a_rt_pc_is_ours(pcs[skip])) skip++;
  long depth = a2a_rt.opts.stack_depth;
  int max = (int)(sizeof st->pc / sizeof st->pc[0]);
  if (depth < max) max = depth < 0 ? 0 : (int)depth;
  st->n = 0;
  /* On a thread that runs Python: its frames first (rt_python.c), then the
   * native frames up to where the interpreter begins, at least a few of
   * them (up to 4, at most half the depth: the C++ entry points the call
   * went through). */
  int nat = 0;
  while (skip + nat < n && !a2a_rt_py_pc_in_interpreter(pcs[skip + nat])) nat++;
  int keep = nat < 4 ? nat : 4;
  if (keep > max / 2) keep = max / 2;   /* a short stack is mostly Python */
  bool python = false;
  int np = a2a_rt_py_capture(st->pc, max - keep, &python);
  if (python) {
    st->n = np;
    for (int i = skip; i < skip + nat && st->n < max; i++) st->pc[st->n++] = a2a_rt_py_native(pcs[i]);
    return;
  }
  for (int i = skip; i < n && st->n < max; i++) st->pc[st->n++] = pcs[i];
}

/* ---- symbol tables ---- */

typedef struct symtab {
  const void *key;            /* the object's link_map */
  const ElfW(Sym) *syms;
  size_t nsyms;
  const char *strs;
  size_t strsz;
  a2a_rt_dwarf dwarf;         /* line tables, when the object has them */
  bool has_dwarf;
} symtab;

static symtab g_tabs[32];
static int g_ntabs;

/* Map path and locate .symtab/.strtab; leaves t->nsyms 0 on any doubt. */
static void load_symtab(symtab *t, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)sizeof(ElfW(Ehdr))) {
    close(fd);
    return;
  }
  size_t size = (size_t)sb.st_size;
  const unsigned char *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return;
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m;
  bool ok = memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_shoff > 0 &&
            eh->e_shentsize == sizeof(ElfW(Shdr)) &&
            eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) <= size;
  if (ok) {
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(m + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
      const ElfW(Shdr) *ss = &sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > size || ss->sh_offset + ss->sh_size > size)
        break;
      t->syms = (const ElfW(Sym) *)(m + sh[i].sh_offset);
      t->nsyms = sh[i].sh_size / sizeof(ElfW(Sym));
      t->strs = (const char *)(m + ss->sh_offset);
      t->strsz = ss->sh_size;
      break;
    }
    t->has_dwarf = a2a_rt_dwarf_from_elf(m, size, &t->dwarf);
  }
  /* The mapping stays for the life of the process when it is used. */
  if (!t->nsyms && !t->has_dwarf) munmap((void *)m, size);
}

static symtab *tab_for(const struct link_map *lm, const char *path) {
  for (int i = 0; i < g_ntabs; i++)
    if (g_tabs[i].key == lm) return &g_tabs[i];
  if (g_ntabs == (int)(sizeof g_tabs / sizeof g_tabs[0])) return NULL;
  symtab *t = &g_tabs[g_ntabs++];
  memset(t, 0, sizeof *t);
  t->key = lm;
  load_symtab(t, path);
  return t;
}

/* The function symbol containing rel (an address relative to the load
 * bias); returns its name and start, or NULL. */
static const char *lookup(const symtab *t, uintptr_t rel, uintptr_t *start) {
  const char *best = NULL;
  for (size_t i = 0; t && i < t->nsyms; i++) {
    const ElfW(Sym) *s = &t->syms[i];
    if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF) continue;
    if (rel < s->st_value || rel >= s->st_value + (s->st_size ? s->st_size : 1)) continue;
    if (s->st_name >= t->strsz) continue;
    best = t->strs + s->st_name;
    *start = s->st_value;
    break;
  }
  return best;
}

static const char *base_of(const char *p) {
  const char *b = strrchr(p, '/');
  return b ? b + 1 : p;
}

/* ---- C++ names ---- */

/* __cxa_demangle from the libstdc++ of the process, when one is loaded (no
 * link dependency); its output buffer is kept between calls (it grows it
 * with realloc). Under a2a_rt_mu. */
static char *g_dm_buf;
static size_t g_dm_len;

static const char *demangle(const char *name) {
  static a2a_rt_demangle_fn dm;
  if (!name || name[0] != '_' || name[1] != 'Z') return name;
  if (!dm) dm = (a2a_rt_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
  /* Loaded only in a local scope (a Python extension's dependency): found
   * by soname, never loaded by us. The handle stays open: dm must outlive
   * any dlclose by the application. */
  static const char *const libs[] = {"libstdc++.so.6", "libc++abi.so.1"};
  for (size_t i = 0; !dm && i < sizeof libs / sizeof libs[0]; i++) {
    void *h = dlopen(libs[i], RTLD_NOLOAD | RTLD_LAZY);
    if (h) dm = (a2a_rt_demangle_fn)dlsym(h, "__cxa_demangle");
  }
  return a2a_rt_cxx_demangle(dm, name, &g_dm_buf, &g_dm_len);   /* no dm: stays mangled */
}

/* "name+0xoff (module)[ at file:line]" in cap bytes, the name shortened to
 * what is left by the rest. */
static void put_native(char *o, size_t cap, const char *name, unsigned long off,
                       const char *module, const char *file, unsigned line) {
  char rest[160], nm[4096];
  if (file) snprintf(rest, sizeof rest, "+0x%lx (%.40s) at %.60s:%u", off, module, file, line);
  else snprintf(rest, sizeof rest, "+0x%lx (%.40s)", off, module);
  snprintf(nm, sizeof nm, "%s", name);
  size_t budget = cap - 1 - strlen(rest);
  a2a_rt_cxx_shorten(nm, budget < 40 ? 40 : budget);
  /* nm fits (shortened above); the precision only bounds the compiler's view. */
  snprintf(o, cap, "%.*s%s", (int)(cap - 1), nm, rest);
}

int a2a_rt_symbolize(const void *pc, char (*out)[A2A_RT_FRAME_LEN], int max) {
  if (a2a_rt_is_handle(pc)) return a2a_rt_py_render(pc, out, max);
  return a2a_rt_symbolize_native(pc, out, max, false);
}

int a2a_rt_symbolize_native(const void *pc, char (*out)[A2A_RT_FRAME_LEN], int max,
                            bool drop_glue) {
  const size_t cap = A2A_RT_FRAME_LEN;
  Dl_info info;
  struct link_map *lm = NULL;
  if (max <= 0) return 0;
  /* pc is a return address: look up pc-1, which is inside the call
   * instruction's function even when the call is the last instruction. */
  const char *q = (const char *)pc - 1;
  if (!dladdr1(q, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) {
    snprintf(out[0], cap, "%p (?)", pc);
    return 1;
  }
  bool is_main = lm->l_name == NULL || lm->l_name[0] == '\0';
  const char *path = is_main ? "/proc/self/exe" : lm->l_name;
  const char *module = base_of(info.dli_fname && *info.dli_fname ? info.dli_fname : path);
  uintptr_t rel = (uintptr_t)q - lm->l_addr, start = 0;
  symtab *t = tab_for(lm, path);

  /* The function: exported (dladdr) or from .symtab, demangled. */
  const char *name = NULL;
  unsigned long off = 0;
  if (info.dli_sname && info.dli_saddr) {
    name = info.dli_sname;
    off = (unsigned long)((uintptr_t)pc - (uintptr_t)info.dli_saddr);
  } else if ((name = lookup(t, rel, &start)) != NULL) {
    off = (unsigned long)((uintptr_t)pc - lm->l_addr - start);
  }
  char fname[4096];
  if (name) {
    snprintf(fname, sizeof fname, "%s", demangle(name));   /* the buffer is reused */
    name = fname;
  }
  /* pybind11's dispatch glue between a Python frame and the bound C++
   * function says nothing the frames around it do not (drop_glue: the
   * frame was captured under Python frames). */
  if (drop_glue && name && a2a_rt_cxx_in_namespace(name, "pybind11::")) return 0;

  /* Source position of pc and the inlined calls it is inside (-g only). */
  const char *file = NULL;
  unsigned line = 0;
  a2a_rt_inline inl[8];
  int ninl = 0;
  if (t && t->has_dwarf) {
    if (!a2a_rt_dwarf_lookup(&t->dwarf, rel, &file, &line)) file = NULL;
    ninl = a2a_rt_dwarf_inlines(&t->dwarf, rel, inl, 8);
  }
  int k = 0;
  /* One frame per inlined function, innermost first: "f (inlined) (module)
   * at file:line", each at the position inside it. */
  for (int j = 0; j < ninl && k < max - 1; j++, k++) {
    const char *f = j == 0 ? file : inl[j - 1].call_file;
    unsigned l = j == 0 ? line : inl[j - 1].call_line;
    char nm[4096];
    snprintf(nm, sizeof nm, "%s", demangle(inl[j].name));
    a2a_rt_cxx_shorten(nm, 80);
    if (f) snprintf(out[k], cap, "%.80s (inlined) (%.40s) at %.40s:%u", nm, module, base_of(f), l);
    else snprintf(out[k], cap, "%.80s (inlined) (%.40s)", nm, module);
  }
  if (ninl > 0) {   /* the function the code was inlined into: at the call */
    file = inl[ninl - 1].call_file;
    line = inl[ninl - 1].call_line;
  }
  char *o = out[k];
  /* " at file.c:line" when the object carries line tables (built with -g). */
  if (name) put_native(o, cap, name, off, module, file ? base_of(file) : NULL, line);
  else if (file)
    snprintf(o, cap, "?? (%.40s+0x%lx) at %.60s:%u", module, (unsigned long)((uintptr_t)pc - lm->l_addr),
             base_of(file), line);
  else snprintf(o, cap, "?? (%s+0x%lx)", module, (unsigned long)((uintptr_t)pc - lm->l_addr));
  return k + 1;
}
