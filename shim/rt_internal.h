/* rt_internal.h - internals of the process runtime (shim/rt_*.c).
 *
 * The runtime is the half of shim/ that is not interposition: lazy
 * initialization and the reentrancy guard, the options, the report sink
 * (dedup, caps, the two log files, stderr echo, summary), stacks, the host
 * services the analyzers use, the exit policy and fork handling. See
 * docs/design.md, "Runtime: options, log, exit policy, fork".
 *
 * Declarations are grouped by the .c file that defines them. The "pure"
 * modules (rt_options.c, rt_checks.c, rt_format.c) use no CUDA, no files and
 * no global runtime state, so the unit tests compile them directly
 * (tests/unit/test_options.c, test_log_checks.c, test_log_format.c).
 *
 * Locking: a2a_rt_mu (rt_report.c) protects the log files, the formatting
 * buffers and the symbolizer caches; rt_report.c's own table lock, held only
 * for a few loads and stores and taken after a2a_rt_mu (never the other way
 * round), the finding counts. Neither is held while calling into an
 * analyzer or into CUDA/NCCL, nor on the hot path.
 */
#ifndef A2A_RT_INTERNAL_H
#define A2A_RT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "a2a_core.h"
#include "a2a_runtime.h"

#define A2A_RT_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* rt_options.c (pure): the one options table (analyzers/a2a_options.inc). */

/* Row indices, in table order. */
enum {
#define A2A_OPT_INT(name, env, def, range, help) A2A_RT_OPT_##name,
#define A2A_OPT_DBL(name, env, def, range, help) A2A_RT_OPT_##name,
#define A2A_OPT_STR(name, env, def, help) A2A_RT_OPT_##name,
#include "a2a_options.inc"
#undef A2A_OPT_INT
#undef A2A_OPT_DBL
#undef A2A_OPT_STR
  A2A_RT_NOPTS
};

/* Values of the runtime's ENUM options (index in their "a|b|c" list). */
enum { A2A_ECHO_NONE = 0, A2A_ECHO_ERROR, A2A_ECHO_WARNING, A2A_ECHO_INFO };

typedef const char *(*a2a_rt_getenv_fn)(const char *name);
/* Receives one complete warning line (no trailing newline). */
typedef void (*a2a_rt_warn_fn)(void *arg, const char *line);

/* Fill *o with the table's defaults. */
void a2a_rt_options_defaults(a2a_options *o);
/* Parse every row from getenv_fn. A value that does not parse (decimal with
 * trailing garbage, out of range, not one of an ENUM's names) is reported
 * through warn, naming the variable, and the default is kept. An empty value
 * counts as unset. from_env[i] (may be NULL) is set to 1 for each row whose
 * value came from the environment. String values are copied into a static
 * pool owned by this module (each call reuses it). Returns the number of
 * warnings. */
int a2a_rt_options_parse(a2a_options *o, unsigned char *from_env,
                         a2a_rt_getenv_fn getenv_fn, a2a_rt_warn_fn warn,
                         void *warn_arg);
/* Strict decimal parse of a whole string into [lo, hi]; true on success. */
bool a2a_rt_parse_long(const char *s, long lo, long hi, long *out);
/* The name of value idx in an "a|b|c" list, copied into buf. */
const char *a2a_rt_enum_name(const char *values, long idx, char *buf, size_t cap);
/* Append "ENV=value  (default|environment)\n" per row to buf. Returns the
 * length written (buf always NUL-terminated). */
size_t a2a_rt_options_describe(const a2a_options *o, const unsigned char *from_env,
                               char *buf, size_t cap);
/* The help table: markdown=0 plain text for a terminal, 1 a Markdown table
 * (README.md's options section is generated with A2ACHECK_HELP=2). */
size_t a2a_rt_options_help(char *buf, size_t cap, int markdown);

/* ------------------------------------------------------------------ */
/* rt_checks.c (pure): A2ACHECK_CHECKS selection and A2ACHECK_FAIL_ON, both
 * validated against the checks table (analyzers/a2a_checks.inc). */

#define A2A_RT_MAX_RULES 32
typedef struct a2a_rt_rules {
  int n;
  bool default_on;            /* before any rule applies */
  struct {
    char pat[64];             /* "all", a category ("perf") or a full name */
    bool enable;
    unsigned char kind;       /* 0 all, 1 category, 2 exact name */
  } r[A2A_RT_MAX_RULES];
} a2a_rt_rules;

/* Parse a comma list ("all,-perf,+perf.env"). Entries are applied in order,
 * later ones win; a list whose first entry is a plain or '+' selection
 * starts from "nothing enabled", one that starts with '-' from "all
 * enabled"; NULL or "" enables everything. Malformed entries, unknown
 * categories and names that are not in the checks table (with the closest
 * name as a suggestion) are reported through warn (once each) and skipped.
 * Returns the number of warnings. */
int a2a_rt_checks_parse(a2a_rt_rules *rs, const char *spec, a2a_rt_warn_fn warn,
                        void *warn_arg);
/* Whether the rules enable check id. */
bool a2a_rt_checks_eval(const a2a_rt_rules *rs, a2a_check_id id);
/* Whether rule i matches check id. */
bool a2a_rt_rule_matches(const a2a_rt_rules *rs, int i, a2a_check_id id);
/* The enabled set the rules select. */
a2a_check_set a2a_rt_checks_set(const a2a_rt_rules *rs);

/* The failure policy (A2ACHECK_FAIL_ON). Levels by breadth. */
enum { A2A_FAIL_LEVEL_NONE = 0, A2A_FAIL_LEVEL_DEADLOCK, A2A_FAIL_LEVEL_ERROR,
       A2A_FAIL_LEVEL_WARNING };
typedef struct a2a_rt_failpol {
  int level;                  /* A2A_FAIL_LEVEL_* */
  bool never;                 /* "never": nothing fails */
  a2a_check_set include;      /* these checks fail at any severity */
  a2a_check_set exclude;      /* these never fail */
  bool defaulted;             /* nothing usable was given: the default */
  /* Per check, at how many severities a2a_rt_failpol_matches is true,
   * computed by a2a_rt_failpol_parse from the fields above: matching is
   * monotone in the severity (a check or a deadlock matches at any, a
   * level from its own up), so it matches at sev exactly when sev >= 3 -
   * nmatch (a2a_rt_failpol_hit). 0, never, in a zeroed policy, as
   * a2a_rt_failpol_matches answers for one. */
  uint8_t nmatch[A2A_CK__COUNT];
} a2a_rt_failpol;
/* Parse a comma list of levels (deadlock, error, warning, never; case-
 * insensitive) and [-]checks/categories; unset or nothing usable means
 * "deadlock". Bad entries are reported through warn and skipped. Returns
 * the number of warnings. */
int a2a_rt_failpol_parse(a2a_rt_failpol *p, const char *spec, a2a_rt_warn_fn warn,
                         void *warn_arg);
/* Whether a finding of check id at severity sev triggers the policy. */
bool a2a_rt_failpol_matches(const a2a_rt_failpol *p, a2a_check_id id, a2a_severity sev);
/* The same answer from the parsed table, inline (the report sink's
 * repeats): id a check of the table, sev clamped to 0..2, p parsed by
 * a2a_rt_failpol_parse. */
static inline bool a2a_rt_failpol_hit(const a2a_rt_failpol *p, a2a_check_id id, a2a_severity sev) {
  return (unsigned)sev + p->nmatch[id] >= 3u;
}
/* The policy in effect as a canonical list ("error,-group.concurrent-use"). */
size_t a2a_rt_failpol_describe(const a2a_rt_failpol *p, char *buf, size_t cap);

/* ------------------------------------------------------------------ */
/* rt_format.c (pure): one finding as a JSON line and as text. */

#define A2A_RT_FRAME_LEN 200
#define A2A_RT_COUNT_WIDTH 20   /* the count field is padded to this width so
                                   the exit path can patch it in place */

typedef struct a2a_rt_record {
  unsigned long id;           /* finding number in this process (1, 2, ...) */
  const char *check;
  a2a_severity severity;
  int rank;                   /* -1 unknown */
  const char *host;
  int pid;
  uint32_t thread;
  const a2a_comm *comm;       /* or NULL */
  const char *message;
  const char *details_json;   /* or NULL */
  char (*frames)[A2A_RT_FRAME_LEN];
  int nframes;
  unsigned long long count;
  const char *time_iso;       /* "2026-01-02T03:04:05.678Z" */
} a2a_rt_record;

/* Format rec as one JSON object and a '\n'. *count_off receives the offset of
 * the count digits inside buf (A2A_RT_COUNT_WIDTH characters: digits padded
 * with spaces). If the record does not fit, details and then stack frames
 * are dropped ("truncated":true); the result is always one valid line.
 * Returns the length (0 only if cap is absurdly small). */
size_t a2a_rt_format_json(const a2a_rt_record *rec, char *buf, size_t cap,
                          size_t *count_off);
/* Format rec as an indented human-readable block ending in '\n'. */
size_t a2a_rt_format_text(const a2a_rt_record *rec, char *buf, size_t cap);
/* Whether s is exactly one JSON object (with nothing but whitespace after). */
bool a2a_rt_json_is_object(const char *s);
/* Bounded appends used by the formatters (never overflow; set *ovf). */
size_t a2a_rt_puts(char *buf, size_t cap, size_t len, const char *s, bool *ovf);
size_t a2a_rt_printf(char *buf, size_t cap, size_t len, bool *ovf,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* JSON string with quotes. */
size_t a2a_rt_put_jstr(char *buf, size_t cap, size_t len, const char *s, bool *ovf);
/* "error", "warning", "info". */
const char *a2a_rt_severity_name(a2a_severity s);
/* UTC wall clock as ISO 8601 with milliseconds. */
void a2a_rt_time_iso(char *buf, size_t cap);

/* ------------------------------------------------------------------ */
/* rt_dwarf.c (pure): file:line from DWARF line tables. */

typedef struct a2a_rt_dwarf {
  const uint8_t *line, *line_str, *str;   /* .debug_line, .debug_line_str, .debug_str */
  size_t line_size, line_str_size, str_size;
  const uint8_t *info, *abbrev;           /* .debug_info, .debug_abbrev */
  size_t info_size, abbrev_size;
  const uint8_t *rnglists, *ranges;       /* .debug_rnglists (v5), .debug_ranges (v4) */
  size_t rnglists_size, ranges_size;
} a2a_rt_dwarf;

/* One inlined call containing an address: the inlined function's name and
 * where it was inlined (call_file NULL if unknown). */
typedef struct a2a_rt_inline {
  const char *name;
  const char *call_file;
  unsigned call_line;
} a2a_rt_inline;

/* Find the sections in an ELF64 little-endian file image; false if there is
 * no (uncompressed) .debug_line. */
bool a2a_rt_dwarf_from_elf(const void *map, size_t size, a2a_rt_dwarf *d);
/* The source file (as recorded, not necessarily absolute) and line of addr
 * (a link-time address of the object). False if unknown. */
bool a2a_rt_dwarf_lookup(const a2a_rt_dwarf *d, uint64_t addr, const char **file,
                         unsigned *line);
/* The inlined calls whose code contains addr, innermost first (at most max);
 * 0 when addr is not inside inlined code or the information is missing. */
int a2a_rt_dwarf_inlines(const a2a_rt_dwarf *d, uint64_t addr, a2a_rt_inline *out, int max);

/* ------------------------------------------------------------------ */
/* rt_suppress.c: A2ACHECK_SUPPRESSIONS, `check:pattern` rules (the format
 * and the matching rule are at the top of rt_suppress.c). */
#define A2A_RT_SUPP_MAX 256          /* rules kept per file */
#define A2A_RT_SUPP_FILE_MAX 65536   /* bytes read from the file */
typedef struct a2a_rt_supp_rule {
  char check[64];                    /* a check, a category or a glob */
  char pattern[192];                 /* a glob, '^'/'$' anchors */
} a2a_rt_supp_rule;
typedef struct a2a_rt_supp {
  int n;
  a2a_rt_supp_rule rules[A2A_RT_SUPP_MAX];
  char file[256];
} a2a_rt_supp;
/* Pure: parse text[0..len) into *s; each bad line is reported through warn
 * ("FILE:LINE: why") and skipped. Returns the number of bad lines. */
int a2a_rt_supp_parse(a2a_rt_supp *s, const char *text, size_t len, const char *fname,
                      a2a_rt_warn_fn warn, void *warn_arg);
/* Pure: the index of the first rule suppressing a finding of check whose
 * stack renders as frames[0..nframes), -1 if none. */
int a2a_rt_supp_match(const a2a_rt_supp *s, const char *check,
                      const char (*frames)[A2A_RT_FRAME_LEN], int nframes);
/* Pure: the sanitizers' pattern rule on t[0..tn). */
bool a2a_rt_supp_glob(const char *pat, const char *t, size_t tn);
/* Read and parse the process's file once (init); one message if it cannot
 * be read. Returns the number of rules, -1 if unreadable. */
int a2a_rt_supp_load(const char *path, a2a_rt_warn_fn warn, void *warn_arg);
/* The process's rules, NULL when there are none. */
const a2a_rt_supp *a2a_rt_supp_active(void);

/* rt_pyframe.c (pure): CPython layouts, library frames, frame text, C++
 * name shortening. */

/* Where one CPython version keeps a thread's innermost frame and what is
 * read from frames, code objects and strings: byte offsets. */
typedef struct a2a_rt_py_layout {
  int minor;              /* 3.minor */
  bool frame_objects;     /* 3.9/3.10: a PyFrameObject chain; else interpreter frames */
  int ts_frame;           /* in PyThreadState: the frame, or the _PyCFrame pointer */
  int cframe_current;     /* -1: ts_frame is the frame; else current_frame in _PyCFrame */
  int fr_back, fr_code, fr_instr;   /* previous frame, code object, position */
  int fr_owner;           /* the frame's owner byte, -1 none */
  int owner_cstack;       /* FRAME_OWNED_BY_CSTACK (frames to skip), -1 none */
  int instr_scale;        /* frame objects: bytes per f_lasti unit; else 0: fr_instr is
                             a pointer into the code at co_code */
  int co_filename, co_name, co_qualname, co_firstlineno, co_code;   /* qualname -1: none */
  int ob_type;            /* PyObject.ob_type */
  int str_length, str_state, str_ascii_size, str_compact_size;      /* PyASCIIObject */
} a2a_rt_py_layout;

/* The built-in layout of CPython 3.minor (9..12); false for other versions. */
bool a2a_rt_py_layout_builtin(int minor, a2a_rt_py_layout *L);
/* The layout from 3.13's _Py_DebugOffsets (n bytes at debug); 0 on success,
 * -1 not a 3.13 table, -2 a free-threaded build (not supported). */
int a2a_rt_py_layout_from_debug(const void *debug, size_t n, a2a_rt_py_layout *L);
/* A PEP 393 string's code points (kind 1, 2 or 4 bytes each) as UTF-8,
 * NUL-terminated, cut at a whole character. Returns the length. */
size_t a2a_rt_py_str_utf8(unsigned kind, const void *data, size_t len, char *out, size_t cap);

/* What a code object's file is. */
enum { A2A_PY_USER = 0, A2A_PY_LIB, A2A_PY_STDLIB };
/* Classify a co_filename: under site-packages/ or dist-packages/ (lib = the
 * top-level package), torch's own tree elsewhere (lib "torch"), the standard
 * library (.../lib/python3.N/, <frozen ...>; lib "stdlib"), else user code
 * (also <string>, <stdin>). */
int a2a_rt_py_classify(const char *path, char *lib, size_t cap);
/* Which frames a stack shows, from the classes of a thread's frames
 * (innermost first; recorded[i]: frame i has an interned entry). The
 * anchor is the innermost recorded user frame, else the innermost recorded
 * frame outside the standard library, else the innermost recorded one (-1:
 * none). The plan: the anchor and its callers outwards, each run of other
 * frames between user frames folded into one item; then the frames inside
 * the anchor (what it called: torch's API) as one LEADING fold. */
int a2a_rt_py_anchor(const unsigned char *cls, const bool *recorded, int n);
enum { A2A_PY_ITEM_FRAME = 1, A2A_PY_ITEM_FOLD, A2A_PY_ITEM_LEADING };
typedef struct a2a_rt_py_item {
  int kind;
  int a, b;               /* frames [a, b) */
} a2a_rt_py_item;
int a2a_rt_py_plan(const unsigned char *cls, const bool *recorded, int n, a2a_rt_py_item *out,
                   int max);
/* "func (path:line)", the path shortened from the left (".../b/c.py") when
 * the whole does not fit in cap. Returns the length. */
size_t a2a_rt_py_frame_text(char *out, size_t cap, const char *func, const char *file,
                            int line);
/* Copy a frame's text into cap bytes; a "func (path:line)" frame that does
 * not fit keeps its line and loses the start of its path. */
void a2a_rt_py_fit(const char *frame, char *out, size_t cap);
/* "... N frames in torch[, deepspeed[ and K more]][, innermost func]". */
size_t a2a_rt_py_fold_text(char *out, size_t cap, int count, const char *lib1,
                           const char *lib2, int nlibs, const char *innermost);
/* __cxa_demangle's signature. */
typedef char *(*a2a_rt_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
/* name demangled with dm into *buf (a malloc'ed buffer of *len bytes that dm
 * may replace; start with NULL, 0), or name itself: not a mangled C++ name
 * ("_Z..."), no dm (no C++ runtime in the process), or dm failed. */
const char *a2a_rt_cxx_demangle(a2a_rt_demangle_fn dm, const char *name, char **buf,
                                size_t *len);
/* Shorten a demangled C++ name in place to at most budget characters:
 * drop the parameter list, then template arguments ("<...>"), then cut. */
void a2a_rt_cxx_shorten(char *s, size_t budget);
/* Whether a demangled function name (with or without a return type) is a
 * member of namespace ns ("pybind11::"). */
bool a2a_rt_cxx_in_namespace(const char *s, const char *ns);

/* ------------------------------------------------------------------ */
/* rt_python.c: Python call sites (docs/design.md, "Python call sites").
 *
 * Stacks and call sites hold a2acheck handles besides return addresses:
 * values with bit 63 set (never a user-space address), rendered by the
 * symbolizer. Kinds: a call site (an interned Python frame + the native
 * return address), a Python frame, a folded run of library frames, and a
 * native frame captured under Python frames (pybind11 glue is dropped when
 * it is rendered). */

/* a2a_rt_py_site(): a2a_runtime.h. */
/* The calling thread's Python stack as handles, innermost user frame first,
 * library runs folded (see rt_python.c); at most max. *python_seen is set
 * when the thread has Python frames (the native part is then cut at the
 * interpreter). Returns the number of handles. */
int a2a_rt_py_capture(void **out, int max, bool *python_seen);
/* Whether pc lies in the Python interpreter's own object. */
bool a2a_rt_py_pc_in_interpreter(const void *pc);
/* Whether v is a handle rather than a return address. */
static inline bool a2a_rt_is_handle(const void *v) { return ((uintptr_t)v >> 63) != 0; }
/* A native frame captured under Python frames, as a handle (or pc itself
 * if it cannot be encoded). */
void *a2a_rt_py_native(void *pc);
/* Render a handle into out[0..max): like a2a_rt_symbolize. Requires
 * a2a_rt_mu (it symbolizes native parts). */
int a2a_rt_py_render(const void *h, char (*out)[A2A_RT_FRAME_LEN], int max);
/* One line for the log header: the interpreter found and whether its frames
 * are read ("" when there is no Python in the process). */
const char *a2a_rt_py_status(void);

/* ------------------------------------------------------------------ */
/* rt_init.c: state, guard, lazy init. */

enum {
  A2A_RT_UNINIT = 0,
  A2A_RT_INITIALIZING,
  A2A_RT_READY,
  A2A_RT_DISABLED,
  A2A_RT_FINISHED,            /* exit path started: pass everything through */
};

typedef struct a2a_rt_globals {
  a2a_options opts;
  unsigned char opt_from_env[A2A_RT_NOPTS > 0 ? A2A_RT_NOPTS : 1];
  a2a_rt_rules rules;
  a2a_rt_failpol failpol;     /* A2ACHECK_FAIL_ON, parsed */
  int pid;
  char host[64];
  int env_rank;               /* from RANK & co, -1 if none */
  char log_dir[1024];         /* absolute, %h and %p not yet expanded */
  char log_dir_why[128];      /* how log_dir was chosen (log header) */
  char init_warnings[2048];   /* warnings printed at init, repeated in the log */
  char argv0[256];
} a2a_rt_globals;

extern A2A_HIDDEN a2a_rt_globals a2a_rt;
extern A2A_HIDDEN const a2a_host a2a_rt_host;

int a2a_rt_state(void);
void a2a_rt_set_state(int s);
/* Whether at least one NCCL call went through the shim in this process. */
bool a2a_rt_nccl_seen(void);
/* Called in the fork child. */
void a2a_rt_init_after_fork_child(void);
/* Print a line "a2acheck: <text>\n" on stderr with one write(2). */
void a2a_rt_stderr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------------ */
/* rt_report.c: the report sink (a2a_report, a2a_check_enabled). */

extern A2A_HIDDEN pthread_mutex_t a2a_rt_mu;
/* Take a2a_rt_mu, waiting at most `seconds`; false on timeout. Used on every
 * path that must not hang the process (see rt_report.c). */
bool a2a_rt_lock_within(int seconds);
void a2a_rt_report_init(void);
/* Write the summary (stderr, text log, JSONL) and patch the final counts
 * into the JSONL. exit_status is recorded; fail_reason is non-NULL when the
 * process is being ended by fail_now. Called once by the exit path. */
void a2a_rt_report_summary(int exit_status, const char *fail_reason);
/* Whether any finding so far triggers the failure policy. */
bool a2a_rt_report_fail_matched(void);
/* Forget everything inherited from the parent (fork child). */
void a2a_rt_report_after_fork_child(void);

/* ------------------------------------------------------------------ */
/* rt_log.c: the two log files. All functions require a2a_rt_mu held. */

/* Append one finding: text to the .log, json (one line) to the .jsonl.
 * Opens the files on first use (mkdir -p) and renames them once the global
 * rank becomes known. *json_off receives the JSONL file offset where json
 * starts (-1 if not written). Returns false if the logs are unavailable
 * (the caller then echoes the finding to stderr). */
bool a2a_rt_log_append(const char *text, size_t tn, const char *json, size_t jn,
                       off_t *json_off);
/* Overwrite n bytes at offset off of the JSONL file (count patching). */
void a2a_rt_log_patch_json(off_t off, const char *s, size_t n);
/* The .jsonl path ("" before the first write or if unavailable). */
const char *a2a_rt_log_jsonl_path(void);
bool a2a_rt_log_unavailable(void);
/* Close the inherited descriptors without writing (fork child). */
void a2a_rt_log_after_fork_child(void);
/* The first write error on a log file (errno value, 0 if none) and the path
 * of that file; the summary reports it. */
int a2a_rt_log_write_error(const char **path);
/* Whether this process has created its log files. */
bool a2a_rt_log_opened(void);

/* ------------------------------------------------------------------ */
/* rt_logdir.c: where the logs go and which directories may hold them (pure
 * policy, tests/unit/test_logdir.c). */

/* The run directory name of this process's job under the default log
 * directory, from the launcher's job identity (see rt_logdir.c) into
 * out[0..cap); returns what it was derived from, for the log header. */
const char *a2a_rt_job_label(a2a_rt_getenv_fn get, const char *host, int pid, int ppid,
                             char *out, size_t cap);
/* NULL if a directory with this owner and mode may receive the log files,
 * else the reason it may not. */
const char *a2a_rt_dir_check(unsigned uid, unsigned mode, unsigned euid);

/* ------------------------------------------------------------------ */
/* rt_stack.c: stacks and symbols. */

/* Capture the calling thread's stack, skipping liba2acheck's own frames;
 * keeps at most A2ACHECK_STACK_DEPTH frames. */
void a2a_rt_capture_stack(a2a_stack *st);
/* Symbolize a return address or a handle (rt_python.c) into out[0..max):
 * one frame per function inlined at that point (innermost first, "f
 * (inlined) (module) at file:line"), then "func+0xoff (module)" plus " at
 * file:line" when the object has line tables; a handle gives its Python
 * frame(s) or fold. Returns the number of frames written (>= 1 when max >=
 * 1, except 0 for a pybind11 glue frame captured under Python frames).
 * Requires a2a_rt_mu. */
int a2a_rt_symbolize(const void *pc, char (*out)[A2A_RT_FRAME_LEN], int max);
/* a2a_rt_symbolize for a return address (not a handle); drop_glue: return 0
 * frames for pybind11's dispatch glue (a frame captured under Python). */
int a2a_rt_symbolize_native(const void *pc, char (*out)[A2A_RT_FRAME_LEN], int max,
                            bool drop_glue);
/* Whether pc lies in liba2acheck.so itself. */
bool a2a_rt_pc_is_ours(const void *pc);

/* ------------------------------------------------------------------ */
/* rt_host.c: host services, rank, host name. */

int a2a_rt_global_rank(void);
/* Whether the thread of that index (a2a_event.thread) has exited (its TLS
 * destructors ran); false for a live, unknown or main thread. */
bool a2a_rt_thread_exited(uint32_t thread);
/* Whether stream (an explicit handle or cudaStreamPerThread) is known not
 * to be capturing: the REAL cudaStreamIsCapturing under the last-error
 * rule answered cudaStreamCaptureStatusNone. False when it cannot be told. */
bool a2a_rt_stream_not_capturing(void *stream);
/* Strictly parse RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK (first
 * set one wins); -1 if none. */
int a2a_rt_env_rank(a2a_rt_getenv_fn getenv_fn);

/* ------------------------------------------------------------------ */
/* rt_exit.c: exit policy, fail_now, fork, not-intercepting. */

void a2a_rt_exit_install(void);       /* on_exit + pthread_atfork, at init */
void a2a_rt_fail_now(const char *reason);
/* The a2acheck.not-intercepting check (run by the exit path). */
void a2a_rt_check_not_intercepting(void);

#endif /* A2A_RT_INTERNAL_H */
