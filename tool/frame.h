/* frame.h - one stack frame string of a finding, taken apart.
 *
 * Forms accepted (docs/report.md, "Stack frames"); the parser is tolerant:
 * whatever it does not recognize stays in `raw` and the other fields are
 * left empty, never an error.
 *
 *   native, as the runtime writes them today
 *     func+0x1c (module) at file.c:12
 *     func (inlined) (module) at file.c:12
 *     func+0x1c (module)
 *     ?? (module+0x2724a)
 *     module+0x1588
 *   Python and other source-level frames
 *     func (file.py:12)            func (file.py:12:5)
 *     func at file.py:12           file.py:12 in func
 *     file.py:12 (func)            file.py:12
 *     File "file.py", line 12, in func      (traceback style)
 *     any of the above prefixed with "[py] " or "py:" or "python:"
 *
 * A location is a path followed by ":LINE" (and optionally ":COL"), where
 * the path holds a '.' or '/' and no whitespace, unless it is in quotes (the
 * traceback form) or follows " at " (which may have spaces in the path).
 */
#ifndef A2A_TOOL_FRAME_H
#define A2A_TOOL_FRAME_H

#include <stdbool.h>

typedef struct a2a_frame {
  char func[256];      /* "" unknown ("??" is mapped to "") */
  char module[256];    /* object name, "" unknown */
  char file[1024];     /* "" when no location */
  int line;            /* 0 when no location */
  int col;             /* 0 when absent */
  bool inlined;
  bool python;         /* file ends in .py/.pyx/.pyi or the frame says so */
} a2a_frame;

/* Parse s into *f (always fills something; never fails). Returns whether a
 * file:line location was found. */
bool a2a_frame_parse(const char *s, a2a_frame *f);

/* The first frame of stack[0..n) with a file:line, or -1. */
int a2a_frame_first_located(const char *const *stack, int n, a2a_frame *f);

/* "func at file:line", "func (module)", or the raw text, into out. */
void a2a_frame_short(const a2a_frame *f, const char *raw, char *out, unsigned cap);

#endif /* A2A_TOOL_FRAME_H */
