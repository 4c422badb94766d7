/* core_util.c - names and sizes of NCCL enums, and the stable byte hash used
 * to name communicators across ranks. Values follow nccl.h (2.28) but the
 * header is not included, so analyzers build without the CUDA toolkit. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_core.h"

const unsigned char a2a_dtype_sizes[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

const char *a2a_dtype_name(int t) {
  static const char *const n[12] = {"int8", "uint8", "int32", "uint32",
                                    "int64", "uint64", "float16", "float32",
                                    "float64", "bfloat16", "float8e4m3",
                                    "float8e5m2"};
  return (t >= 0 && t < 12) ? n[t] : "invalid-dtype";
}

const char *a2a_coll_name(int c) {
  static const char *const n[A2A_COLL__COUNT] = {
      "AllReduce", "Broadcast", "Reduce", "AllGather",
      "ReduceScatter", "AlltoAll", "Gather", "Scatter"};
  return (c >= 0 && c < A2A_COLL__COUNT) ? n[c] : "unknown-collective";
}

const char *a2a_redop_name(int op) {
  static const char *const n[5] = {"sum", "prod", "max", "min", "avg"};
  if (op < 0) return "none";
  return op < 5 ? n[op] : "premulsum/custom";
}

/* FNV-1a 64 with a final avalanche (splitmix64 finalizer): stable across
 * processes, architectures and runs, which is all the cross-rank identity
 * needs. */
uint64_t a2a_hash_bytes(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  h ^= h >> 30; h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27; h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

const char *a2a_coord_spec_parse(const char *spec, uint32_t *addr, uint16_t *port) {
  const char *colon = spec ? strrchr(spec, ':') : NULL;
  if (!colon) return "is not host:port";
  char ip[64], *end = NULL;
  long p = strtol(colon + 1, &end, 10);
  if (!end || end == colon + 1 || *end || p <= 0 || p > 65535) return "has no port in 1..65535";
  if (colon == spec) return "has no host";
  if ((size_t)(colon - spec) >= sizeof ip) return "has a host part that is too long";
  memcpy(ip, spec, (size_t)(colon - spec));
  ip[colon - spec] = 0;
  struct in_addr a;
  if (inet_pton(AF_INET, ip, &a) != 1)
    return "does not start with an IPv4 address (host names are not resolved)";
  *addr = a.s_addr;
  *port = (uint16_t)p;
  return NULL;
}
