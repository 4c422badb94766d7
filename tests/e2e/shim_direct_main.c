/* shim_direct_main.c - the same calls as shim_local_main, but with the
 * helper (and so libnccl.so.2 and libcudart.so.13) linked into the program:
 * the libraries are in the global scope and the shim finds them with
 * dlsym(RTLD_NEXT). Run plain and preloaded by shim_local.sh, which diffs
 * the outputs. */
#include <stdio.h>

int shim_local_run(FILE *out);

int main(void)
{
  int rc = shim_local_run(stdout);
  fflush(stdout);
  return rc;
}
