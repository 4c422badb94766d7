/* rt_stall_sites.c - librt_stall_sites.so: two exported call sites of
 * ncclGroupEnd() without ncclGroupStart(), for `rt_threads stall`, which
 * loads a copy of this library and then puts a FIFO at the copy's path, so
 * that the runtime's first symbolization of a frame in it (it opens the
 * library's file to read its symbol table) blocks like a slow file system. */
#include <nccl.h>

__attribute__((noinline)) void stall_site_0(void) {
  ncclGroupEnd();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void stall_site_1(void) {
  ncclGroupEnd();
  __asm__ volatile("" ::: "memory");
}
