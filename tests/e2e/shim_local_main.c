/* shim_local_main.c - loads shim_local_helper with dlopen(RTLD_LOCAL) (the
 * way Python imports an extension module) and runs it. The program itself
 * links neither NCCL nor the CUDA runtime.
 *   usage: shim_local_main <path of libshim_local_helper.so> */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: %s helper.so\n", argv[0]);
    return 2;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  if (dlsym(RTLD_DEFAULT, "pncclSend")) {
    fprintf(stderr, "NCCL is in the global scope: the test would not exercise the fallback\n");
    return 2;
  }
  int (*run)(FILE *) = (int (*)(FILE *))dlsym(h, "shim_local_run");
  if (!run) {
    fprintf(stderr, "dlsym: %s\n", dlerror());
    return 2;
  }
  int rc = run(stdout);
  fflush(stdout);
  return rc;
}
