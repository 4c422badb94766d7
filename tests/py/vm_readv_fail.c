/* vm_readv_fail.c - preloaded by tests/py/run_py.sh to make the checked
 * first walk of shim/rt_python.c take its other paths: process_vm_readv()
 * fails with errno = $A2A_TEST_VM_READV:
 *   EPERM   as under a seccomp profile that forbids it: the runtime must fall
 *           back to reading through a pipe, with the same results;
 *   EFAULT  as if the interpreter's memory did not have the expected layout:
 *           the runtime must refuse Python frames for the process, say so
 *           once on stderr, and go on with native frames. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long liovcnt,
                         const struct iovec *remote, unsigned long riovcnt, unsigned long flags) {
  (void)pid, (void)local, (void)liovcnt, (void)remote, (void)riovcnt, (void)flags;
  const char *e = getenv("A2A_TEST_VM_READV");
  errno = e && strcmp(e, "EFAULT") == 0 ? EFAULT : EPERM;
  return -1;
}
