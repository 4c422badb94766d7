/* report.h - rendering a merged job (job.h) in the report formats:
 * text, json, markdown, junit, sarif, html (docs/report.md describes each).
 * Every renderer appends to a strbuf and does no I/O.
 */
#ifndef A2A_TOOL_REPORT_H
#define A2A_TOOL_REPORT_H

#include <stdbool.h>

#include "frame.h"
#include "job.h"
#include "util.h"

typedef enum rp_format {
  RP_TEXT, RP_JSON, RP_MARKDOWN, RP_JUNIT, RP_SARIF, RP_HTML, RP__NFORMATS
} rp_format;

/* "text" ... "html" -> rp_format, -1 otherwise. */
int rp_format_parse(const char *s);
const char *rp_format_name(rp_format f);

typedef struct rp_opts {
  bool color;                /* text: ANSI colours */
  int fail_level;            /* junit: findings at this level are failures
                                (RP_FAIL_*; default RP_FAIL_ERROR) */
  const char *command;       /* the command a2acheck run ran, or NULL */
  int command_status;        /* its exit status, or -1 */
  const rp_verdict *verdict; /* the failure policy's verdict, or NULL */
  int exit_status;           /* the status a2acheck ends with, or -1 */
} rp_opts;

void rp_render(strbuf *b, rp_format fmt, const rp_job *j, const rp_opts *o);

void rp_render_text(strbuf *b, const rp_job *j, const rp_opts *o);
void rp_render_json(strbuf *b, const rp_job *j, const rp_opts *o);
void rp_render_markdown(strbuf *b, const rp_job *j, const rp_opts *o);
void rp_render_junit(strbuf *b, const rp_job *j, const rp_opts *o);
void rp_render_sarif(strbuf *b, const rp_job *j, const rp_opts *o);
void rp_render_html(strbuf *b, const rp_job *j, const rp_opts *o);

/* ---- shared by the renderers (report_common.c) ---- */

/* The call site of an occurrence: the first frame with file:line, else the
 * first frame; f receives the parse. False when the stack is empty. */
bool rp_occ_site(const rp_occ *o, a2a_frame *f, char *out, unsigned cap);
/* "ranks 1,2", "rank 3", "ranks 0-7 and 1 process of unknown rank" */
void rp_ranks_text(strbuf *b, const rp_finding *f);
/* The communicator hash without "0x", or "". */
const char *rp_comm_short(const char *hash);
/* A bandwidth in GB/s, compact. */
void rp_fmt_bw(char *out, size_t cap, double gbps);
/* One-line headline of the job ("2 errors (deadlock), 1 warning"). */
void rp_headline(strbuf *b, const rp_job *j);
/* Total processes ending by a2acheck, without summary, etc. */
typedef struct rp_ends {
  size_t ok, failed_now, fail_matched, no_summary, launchers;
} rp_ends;
void rp_count_ends(const rp_job *j, rp_ends *e);
/* A process that logged nothing but its summary and never had a rank: a
 * launcher (torchrun's agent, the parent of forked ranks). */
bool rp_proc_is_launcher(const rp_proc *p);

#endif /* A2A_TOOL_REPORT_H */
