/* test_xrank_copy.c - the cross-rank analyzer's copy handler, driven
 * directly with synthetic events: a copy that blocks the host publishes
 * the thread as blocked from its PRE to its POST (what the wait-for graph
 * reads, xr_blocked_snapshot), one that cannot block publishes nothing, and
 * the analyzer's POST gate for copies is open exactly while a copy's PRE
 * published a blocked state (a2a_dispatch_hot skips the POST otherwise). */
#include <check.h>
#include <stdlib.h>

#include "a2a_core.h"
#include "collector.h"
#include "xrank_rec.h"

#define DEV 0x10000000u  /* a device segment */
#define HOST 0x7000000u  /* pageable host memory (not in the registry) */

static void setup(void) {
  collector_reset();
  a2a_event ev = ev_make(A2A_EV_ALLOC);
  ev.api = "cudaMalloc";
  ev.u.mem.mem = A2A_MEM_DEVICE;
  ev.u.mem.size = 1u << 20;
  ev.u.mem.ptr = (void *)(uintptr_t)DEV;
  ev_post(&ev, 0);
  ck_assert_int_eq(a2a_analyzer_xrank.init(), 0);
  ck_assert(xr_active());
}

static a2a_event copy_ev(uintptr_t dst, uintptr_t src, int kind, int async) {
  a2a_event ev = ev_make(A2A_EV_MEMCPY);
  ev.api = async ? "cudaMemcpyAsync" : "cudaMemcpy";
  ev.u.copy.dst = (void *)dst;
  ev.u.copy.src = (const void *)src;
  ev.u.copy.bytes = ev.u.copy.width = 256;
  ev.u.copy.height = 1;
  ev.u.copy.cpykind = kind;
  ev.u.copy.async = async;
  return ev;
}

static void phase(a2a_event *ev, a2a_phase ph) {
  ev->phase = ph;
  a2a_analyzer_xrank.on_event(ev);
}

static size_t blocked(void) {
  xr_threadstate ts[8];
  return xr_blocked_snapshot(ts, 8, 0);
}

static unsigned gate(void) {
  return atomic_load(a2a_analyzer_xrank.post_gate);
}

START_TEST(async_copy_that_cannot_block_publishes_nothing) {
  ck_assert(a2a_analyzer_xrank.post_gated & A2A_KIND_BIT(A2A_EV_MEMCPY));
  a2a_event ev = copy_ev(DEV + 4096, DEV, A2A_CPY_D2D, 1);
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 0);
  ck_assert_uint_eq(gate(), 0);
  phase(&ev, A2A_POST);
  ev = copy_ev(HOST, DEV, A2A_CPY_D2D, 1); /* the declared kind decides */
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 0);
  phase(&ev, A2A_POST);
  ck_assert_uint_eq(gate(), 0);
}
END_TEST

START_TEST(async_copy_into_pageable_memory_blocks_until_its_post) {
  a2a_event ev = copy_ev(HOST, DEV, A2A_CPY_D2H, 1);
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 1);
  ck_assert_uint_eq(gate(), 1);
  phase(&ev, A2A_POST);
  ck_assert_uint_eq(blocked(), 0);
  ck_assert_uint_eq(gate(), 0);
  ev = copy_ev(DEV + 4096, DEV, A2A_CPY_D2H, 1); /* into device memory: does not block */
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 0);
  phase(&ev, A2A_POST);
  ev = copy_ev(HOST, DEV, A2A_CPY_DEFAULT, 1); /* DEFAULT from a device segment */
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 1);
  phase(&ev, A2A_POST);
  ck_assert_uint_eq(blocked(), 0);
  ck_assert_uint_eq(gate(), 0);
}
END_TEST

START_TEST(synchronous_copy_blocks_until_its_post) {
  a2a_event ev = copy_ev(DEV + 4096, DEV, A2A_CPY_D2D, 0);
  phase(&ev, A2A_PRE);
  ck_assert_uint_eq(blocked(), 1);
  ck_assert_uint_eq(gate(), 1);
  /* Another thread's copy POST leaves this thread's state alone. */
  a2a_event other = copy_ev(DEV + 4096, DEV, A2A_CPY_D2D, 0);
  other.thread = 2;
  phase(&other, A2A_POST);
  ck_assert_uint_eq(blocked(), 1);
  ck_assert_uint_eq(gate(), 1);
  phase(&ev, A2A_POST);
  ck_assert_uint_eq(blocked(), 0);
  ck_assert_uint_eq(gate(), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("xrank_copy");
  TCase *tc = tcase_create("xrank_copy");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, async_copy_that_cannot_block_publishes_nothing);
  tcase_add_test(tc, async_copy_into_pageable_memory_blocks_until_its_post);
  tcase_add_test(tc, synchronous_copy_blocks_until_its_post);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
