/* param.c - NCCL 2.30's parameter API (ncclParam*) on the simulator.
 *
 * NCCL 2.30 keeps its tunables in a registry that programs can query by
 * key. The simulator's tunables are the environment variables of
 * docs/simulator-nccl.md, read where they are used; its registry is empty.
 * So, as NCCL answers for a key it does not have: ncclParamBind and
 * ncclParamGetParameter fail with ncclInvalidArgument (NCCL logs that at
 * INFO level, not as a WARN), ncclParamGetAllParameterKeys returns no key,
 * ncclParamDumpAll prints the dump's header only. A handle can only come
 * from ncclParamBind, so the getters never get a valid one: NULL arguments
 * are ncclInvalidArgument as in NCCL, any other handle is reported as
 * invalid (NCCL would dereference it).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "sim_nccl.h"

SIM_API(ncclResult_t, ncclParamBind, ncclParamHandle_t *out, const char *key) {
  if (!out || !key) return ncclInvalidArgument;
  sim_info("PARAM: key \"%s\" not found in registry", key);
  return ncclInvalidArgument;
}

static ncclResult_t bad_handle(const void *h, const void *out, const char *fn) {
  if (!h || !out) return ncclInvalidArgument;
  sim_warn("%s : invalid parameter handle %p (the simulator's parameter registry is empty)", fn, h);
  return ncclInvalidArgument;
}

#define SIM_PARAM_GETTER(suffix, ctype)                                          \
  SIM_API(ncclResult_t, ncclParamGet##suffix, ncclParamHandle_t h, ctype *out) { \
    return bad_handle(h, out, "ncclParamGet" #suffix);                           \
  }
SIM_PARAM_GETTER(I8, int8_t)
SIM_PARAM_GETTER(I16, int16_t)
SIM_PARAM_GETTER(I32, int32_t)
SIM_PARAM_GETTER(I64, int64_t)
SIM_PARAM_GETTER(U8, uint8_t)
SIM_PARAM_GETTER(U16, uint16_t)
SIM_PARAM_GETTER(U32, uint32_t)
SIM_PARAM_GETTER(U64, uint64_t)
SIM_PARAM_GETTER(Str, const char *)
#undef SIM_PARAM_GETTER

SIM_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void *out, int maxLen, int *len) {
  (void)maxLen;
  (void)len;
  return bad_handle(h, out, "ncclParamGet");
}

SIM_API(ncclResult_t, ncclParamGetParameter, const char *key, const char **value, int *valueLen) {
  if (!key || !value || !valueLen) return ncclInvalidArgument;
  *value = NULL;
  *valueLen = 0;
  sim_info("PARAM: key \"%s\" not found in registry", key);
  return ncclInvalidArgument;
}

SIM_API(ncclResult_t, ncclParamGetAllParameterKeys, const char ***table, int *tableLen) {
  static const char *none[1] = {NULL};
  if (!table || !tableLen) return ncclInvalidArgument;
  *table = none;
  *tableLen = 0;
  return ncclSuccess;
}

SIM_API(void, ncclParamDumpAll, void) {
  printf("=== ncclParam Registry Dump ===\n");
}
