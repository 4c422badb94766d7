/* launch.h - running the job's command as a child in its own process group
 * and waiting for it like a shell would: SIGINT/SIGTERM/SIGHUP/SIGQUIT sent
 * to a2acheck are forwarded to the whole group; when a2acheck owns the
 * terminal the group gets it (so the job reads the tty and Ctrl-C/Ctrl-Z
 * reach it directly) and stops/continues are passed through; a2acheck is a
 * child subreaper (PR_SET_CHILD_SUBREAPER), so ranks orphaned by their
 * launcher are reaped here (no zombies) and waited for; processes of the
 * group still running after the command ended get a grace period, then
 * SIGTERM and SIGKILL.
 */
#ifndef A2A_TOOL_LAUNCH_H
#define A2A_TOOL_LAUNCH_H

#include <stdbool.h>

typedef struct launch_result {
  int status;               /* shell convention: exit code, 128+signal */
  bool exec_failed;         /* the command could not be executed */
  int exec_errno;
  int forwarded;            /* signals forwarded */
  int last_signal;          /* the last one */
  int stragglers;           /* processes terminated after the command ended */
} launch_result;

/* Run argv (argv[0] looked up in PATH) with the current environment.
 * grace_s: how long processes left in the group (or adopted) may run on
 * after the command exited before they are terminated. */
void launch_run(char *const *argv, double grace_s, bool verbose, launch_result *r);

#endif /* A2A_TOOL_LAUNCH_H */
