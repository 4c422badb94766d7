/* shim_fake_nccl.c - a stand-in for libnccl.so.2 used by the symbol
 * resolution tests (tests/unit/test_resolve.c). It defines the scan marker
 * (pncclSend) and ncclGetVersion twice, like real NCCL, but with DIFFERENT
 * bodies: the profiling alias pncclGetVersion reports 4242 and the plain
 * ncclGetVersion 1111, so a test can tell that the resolver preferred the
 * p-alias. Built twice: under its own soname (found only by the
 * dl_iterate_phdr scan) and under the soname libnccl.so.2 (found by
 * dlopen(RTLD_NOLOAD)). */
#include <stddef.h>

int pncclGetVersion(int *version);
int ncclGetVersion(int *version);
int pncclSend(const void *buf, size_t count, int dtype, int peer, void *comm, void *stream);
int ncclSend(const void *buf, size_t count, int dtype, int peer, void *comm, void *stream);

int pncclGetVersion(int *version)
{
  if (!version) return 4; /* ncclInvalidArgument */
  *version = 4242;
  return 0;
}

int ncclGetVersion(int *version)
{
  if (!version) return 4;
  *version = 1111;
  return 0;
}

int pncclSend(const void *buf, size_t count, int dtype, int peer, void *comm, void *stream)
{
  return comm ? 0 : 4;
}

int ncclSend(const void *buf, size_t count, int dtype, int peer, void *comm, void *stream)
{
  return pncclSend(buf, count, dtype, peer, comm, stream);
}
