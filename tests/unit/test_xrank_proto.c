/* test_xrank_proto.c - the side channel's wire protocol: round trips, and
 * malformed, truncated and oversized input rejected without reading out of
 * bounds; the fuzz target's corpus (tests/fuzz/corpus/proto/: its seeds and
 * every input a fuzzer crashed on) replayed, mutated, in every build.
 *
 *   test_xrank_proto --write-seeds DIR   regenerate the seeds (xrank/fuzz_proto.c)
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corpus_replay.h"
#include "a2a_checks.h"
#include "xrank_proto.h"

int xr_fuzz_one(const uint8_t *data, size_t size);
int xr_fuzz_seeds(const char *dir);
extern unsigned xr_fuzz_dispatched;

static uint8_t buf[1 << 16];

START_TEST(frame_round_trip_fixed) {
  size_t len = 0;
  xr_hello h = {.version = XR_PROTO_VERSION, .pid = 42, .grank = 3};
  memset(h.nonce, 7, sizeof h.nonce);
  strcpy(h.host, "node1");
  ck_assert(xr_put(buf, sizeof buf, &len, XR_MSG_HELLO, &h, sizeof h));
  xr_commreg r = {.comm = 0xabc, .nranks = 4, .rank = 2, .device = 1, .site = 0x1234};
  ck_assert(xr_put(buf, sizeof buf, &len, XR_MSG_COMMREG, &r, sizeof r));

  xr_hdr hdr;
  const uint8_t *pl;
  size_t used, off = 0;
  ck_assert_int_eq(xr_frame(buf, len, &hdr, &pl, &used), 1);
  ck_assert_int_eq(hdr.type, XR_MSG_HELLO);
  xr_hello h2;
  ck_assert_int_eq(xr_get_fixed(&hdr, pl, &h2, sizeof h2), 0);
  ck_assert_int_eq(h2.pid, 42);
  ck_assert_str_eq(h2.host, "node1");
  off += used;
  ck_assert_int_eq(xr_frame(buf + off, len - off, &hdr, &pl, &used), 1);
  xr_commreg r2;
  ck_assert_int_eq(xr_get_fixed(&hdr, pl, &r2, sizeof r2), 0);
  ck_assert_int_eq(r2.rank, 2);
  ck_assert_uint_eq(r2.comm, 0xabc);
  off += used;
  ck_assert_uint_eq(off, len);
  /* Decoding a HELLO as a COMMREG is refused. */
  ck_assert_int_eq(xr_frame(buf, len, &hdr, &pl, &used), 1);
  ck_assert_int_eq(xr_get_fixed(&hdr, pl, &r2, sizeof r2), -1);
}
END_TEST

START_TEST(truncated_needs_more_every_prefix) {
  size_t len = 0;
  xr_op ops[3] = {{.comm = 1, .kind = XR_OP_SEND, .count = 10, .peer = 1},
                  {.comm = 1, .kind = XR_OP_RECV, .count = 20, .peer = 2},
                  {.comm = 2, .kind = XR_OP_COLL, .count = 30, .peer = -1}};
  ck_assert(xr_put_ops(buf, sizeof buf, &len, ops, 3));
  xr_hdr hdr;
  const uint8_t *pl;
  size_t used;
  for (size_t k = 0; k < len; k++)
    ck_assert_int_eq(xr_frame(buf, k, &hdr, &pl, &used), 0);
  ck_assert_int_eq(xr_frame(buf, len, &hdr, &pl, &used), 1);
  xr_op out[4];
  uint32_t n = 0;
  ck_assert_int_eq(xr_get_ops(&hdr, pl, out, 4, &n), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(out[2].count, 30);
  /* A receiver with room for 2 records refuses a batch of 3. */
  ck_assert_int_eq(xr_get_ops(&hdr, pl, out, 2, &n), -1);
}
END_TEST

START_TEST(bad_magic_type_and_oversize) {
  xr_hdr h = {.magic = 0xdeadbeef, .type = XR_MSG_BYE, .len = 8};
  memcpy(buf, &h, sizeof h);
  xr_hdr hdr;
  const uint8_t *pl;
  size_t used;
  ck_assert_int_eq(xr_frame(buf, sizeof h + 8, &hdr, &pl, &used), -1);
  ck_assert_int_eq(xr_frame(buf, 2, &hdr, &pl, &used), -1); /* early reject */
  h.magic = XR_MAGIC;
  h.type = 999;
  memcpy(buf, &h, sizeof h);
  ck_assert_int_eq(xr_frame(buf, sizeof h + 8, &hdr, &pl, &used), -1);
  h.type = 0;
  memcpy(buf, &h, sizeof h);
  ck_assert_int_eq(xr_frame(buf, sizeof h + 8, &hdr, &pl, &used), -1);
  h.type = XR_MSG_STATE;
  h.len = XR_MAX_PAYLOAD + 1;
  memcpy(buf, &h, sizeof h);
  ck_assert_int_eq(xr_frame(buf, sizeof h, &hdr, &pl, &used), -1);
}
END_TEST

START_TEST(wrong_sizes_and_strings) {
  xr_hdr hdr = {.magic = XR_MAGIC, .type = XR_MSG_BYE, .len = 4};
  uint8_t pl[512] = {0};
  ck_assert_int_eq(xr_check_payload(&hdr, pl), -1);     /* short fixed */
  hdr.len = sizeof(xr_bye);
  ck_assert_int_eq(xr_check_payload(&hdr, pl), 0);
  /* HELLO whose host is not NUL-terminated. */
  xr_hello h;
  memset(&h, 'x', sizeof h);
  memcpy(pl, &h, sizeof h);
  hdr.type = XR_MSG_HELLO;
  hdr.len = sizeof h;
  ck_assert_int_eq(xr_check_payload(&hdr, pl), -1);
  /* COMMREG with a rank outside nranks. */
  xr_commreg r = {.nranks = 4, .rank = 4};
  memcpy(pl, &r, sizeof r);
  hdr.type = XR_MSG_COMMREG;
  hdr.len = sizeof r;
  ck_assert_int_eq(xr_check_payload(&hdr, pl), -1);
  /* OPS whose count disagrees with its length, or is zero. */
  uint32_t head[2] = {2, 0};
  memcpy(pl, head, sizeof head);
  hdr.type = XR_MSG_OPS;
  hdr.len = 8 + sizeof(xr_op);
  ck_assert_int_eq(xr_check_payload(&hdr, pl), -1);
  head[0] = 0;
  memcpy(pl, head, sizeof head);
  hdr.len = 8;
  ck_assert_int_eq(xr_check_payload(&hdr, pl), -1);
  hdr.len = 3;
  ck_assert_int_eq(xr_check_payload(&hdr, pl), -1);
}
END_TEST

/* COMMFLUSH / COMMFLUSHED (the wait at ncclCommDestroy): round trip; a
 * wrong size, a negative rank or a zero wait slot is malformed. */
START_TEST(commflush_round_trip_and_malformed) {
  size_t len = 0;
  xr_commflush f = {.comm = 0xfeed, .rank = 3, .seq = 17};
  ck_assert(xr_put(buf, sizeof buf, &len, XR_MSG_COMMFLUSH, &f, sizeof f));
  ck_assert(xr_put(buf, sizeof buf, &len, XR_MSG_COMMFLUSHED, &f, sizeof f));
  xr_hdr hdr;
  const uint8_t *pl;
  size_t used;
  xr_commflush g;
  ck_assert_int_eq(xr_frame(buf, len, &hdr, &pl, &used), 1);
  ck_assert_int_eq(hdr.type, XR_MSG_COMMFLUSH);
  ck_assert_int_eq(xr_get_fixed(&hdr, pl, &g, sizeof g), 0);
  ck_assert_uint_eq(g.comm, 0xfeed);
  ck_assert_int_eq(g.rank, 3);
  ck_assert_uint_eq(g.seq, 17);
  ck_assert_int_eq(xr_frame(buf + used, len - used, &hdr, &pl, &used), 1);
  ck_assert_int_eq(hdr.type, XR_MSG_COMMFLUSHED);
  ck_assert_int_eq(xr_get_fixed(&hdr, pl, &g, sizeof g), 0);
  ck_assert_uint_eq(g.seq, 17);

  uint8_t p[64] = {0};
  xr_hdr h = {.magic = XR_MAGIC, .type = XR_MSG_COMMFLUSH, .len = sizeof f};
  for (int t = 0; t < 2; t++) {
    h.type = t ? XR_MSG_COMMFLUSHED : XR_MSG_COMMFLUSH;
    xr_commflush bad = f;
    memcpy(p, &bad, sizeof bad);
    ck_assert_int_eq(xr_check_payload(&h, p), 0);
    bad.rank = -1;
    memcpy(p, &bad, sizeof bad);
    ck_assert_int_eq(xr_check_payload(&h, p), -1);
    ck_assert_int_eq(xr_get_fixed(&h, p, &g, sizeof g), -1);
    bad = f;
    bad.seq = 0;
    memcpy(p, &bad, sizeof bad);
    ck_assert_int_eq(xr_check_payload(&h, p), -1);
    memcpy(p, &f, sizeof f);
    h.len = sizeof f - 4;
    ck_assert_int_eq(xr_check_payload(&h, p), -1);
    h.len = sizeof f + 8;
    ck_assert_int_eq(xr_check_payload(&h, p), -1);
    h.len = sizeof f;
  }
  /* A COMMFLUSH body decoded as a BYE (another fixed size) is refused. */
  xr_bye b;
  ck_assert_int_eq(xr_get_fixed(&h, p, &b, sizeof b), -1);
}
END_TEST

START_TEST(verdict_round_trip_and_corruption) {
  size_t len = 0;
  xr_verdict v = {.comm = 5, .site = 0x77, .severity = 2, .flags = XR_VERDICT_FAIL,
                  .check = A2A_CK_GROUP_DEADLOCK, .text = "ranks 0 and 1 wait", .json = "{\"a\":1}",
                  .rank_p1 = 3};
  ck_assert(xr_put_verdict(buf, sizeof buf, &len, &v));
  xr_hdr hdr;
  const uint8_t *pl;
  size_t used;
  ck_assert_int_eq(xr_frame(buf, len, &hdr, &pl, &used), 1);
  xr_verdict o;
  ck_assert_int_eq(xr_get_verdict(&hdr, pl, &o), 0);
  ck_assert_int_eq(o.check, A2A_CK_GROUP_DEADLOCK);
  ck_assert_str_eq(o.text, "ranks 0 and 1 wait");
  ck_assert_str_eq(o.json, "{\"a\":1}");
  ck_assert_uint_eq(o.flags, XR_VERDICT_FAIL);
  ck_assert_uint_eq(o.rank_p1, 3);
  /* Remove the text's terminating NUL: refused. */
  uint8_t *copy = malloc(len);
  memcpy(copy, buf, len);
  size_t text_end = (size_t)(o.text - (const char *)buf) + strlen(o.text);
  copy[text_end] = 'X';
  ck_assert_int_eq(xr_frame(copy, len, &hdr, &pl, &used), 1);
  ck_assert_int_eq(xr_get_verdict(&hdr, pl, &o), -1);
  /* A text length pointing past the payload: refused. */
  memcpy(copy, buf, len);
  uint32_t huge = 5000;
  size_t tl_off = sizeof(xr_hdr) + 8 + 8 + 4 + 4 + 48;
  memcpy(copy + tl_off, &huge, 4);
  ck_assert_int_eq(xr_frame(copy, len, &hdr, &pl, &used), 1);
  ck_assert_int_eq(xr_get_verdict(&hdr, pl, &o), -1);
  free(copy);
}
END_TEST

START_TEST(state_round_trip_and_bad_slices) {
  xr_commstate cs[1] = {{.comm = 9, .rank = 1, .nranks = 2, .coll_posted = 3, .peer_off = 0, .npeers = 1}};
  xr_unitstate us[2] = {{.comm = 9, .stream = 0x10, .group = 4, .coll_lo = 2, .coll_hi = 3,
                         .kind = XR_OP_COLL, .coll = 0},
                        {.comm = 9, .stream = 0x10, .group = 5, .peer_off = 1, .npeers = 1,
                         .kind = XR_OP_SEND, .coll = -1}};
  xr_threadstate ts[1] = {{.stream = 0x10, .blocked_ms = 1500, .thread = 1, .wait = XR_WAIT_STREAM}};
  xr_peerent pe[2] = {{.peer = 0, .send_hi = 7, .recv_hi = 6}, {.peer = 0, .send_lo = 6, .send_hi = 7}};
  xr_procstate st = {.version = 11, .ncomms = 1, .nunits = 2, .nthreads = 1, .npeers = 2,
                     .comms = cs, .units = us, .threads = ts, .peers = pe};
  size_t len = 0;
  ck_assert(xr_put_state(buf, sizeof buf, &len, &st));
  ck_assert_uint_eq(len, xr_state_bytes(&st));
  xr_hdr hdr;
  const uint8_t *pl;
  size_t used;
  ck_assert_int_eq(xr_frame(buf, len, &hdr, &pl, &used), 1);
  xr_procstate o;
  ck_assert_int_eq(xr_get_state(&hdr, pl, &o), 0);
  ck_assert_uint_eq(o.version, 11);
  ck_assert_uint_eq(o.nunits, 2);
  ck_assert_uint_eq(o.units[1].group, 5);
  ck_assert_uint_eq(o.peers[1].send_hi, 7);
  ck_assert_uint_eq(o.threads[0].blocked_ms, 1500);
  xr_state_free(&o);
  /* A unit whose peer slice runs past the peer array: refused. */
  us[1].npeers = 2;
  len = 0;
  ck_assert(xr_put_state(buf, sizeof buf, &len, &st));
  ck_assert_int_eq(xr_frame(buf, len, &hdr, &pl, &used), 1);
  ck_assert_int_eq(xr_get_state(&hdr, pl, &o), -1);
  /* A length that disagrees with the counts: refused. */
  us[1].npeers = 1;
  len = 0;
  ck_assert(xr_put_state(buf, sizeof buf, &len, &st));
  xr_hdr h2;
  memcpy(&h2, buf, sizeof h2);
  h2.len -= 4;
  memcpy(buf, &h2, sizeof h2);
  ck_assert_int_eq(xr_frame(buf, len, &hdr, &pl, &used), 1);
  ck_assert_int_eq(xr_get_state(&hdr, pl, &o), -1);
}
END_TEST

/* Before authentication exactly one message of one size is read: the
 * check says "more" for every proper prefix, "done" at the exact end, and
 * refuses as soon as a byte disagrees (magic, type, flags, length) or a
 * byte beyond the message was read. */
START_TEST(handshake_exact_size) {
  xr_hello h = {.version = XR_PROTO_VERSION, .pid = 1};
  size_t len = 0;
  ck_assert(xr_put(buf, sizeof buf, &len, XR_MSG_HELLO, &h, sizeof h));
  for (size_t k = 0; k < len; k++)
    ck_assert_int_eq(xr_hs_check(buf, k, XR_MSG_HELLO, sizeof h), 0);
  ck_assert_int_eq(xr_hs_check(buf, len, XR_MSG_HELLO, sizeof h), 1);
  ck_assert_int_eq(xr_hs_check(buf, len + 1, XR_MSG_HELLO, sizeof h), -1);
  ck_assert_int_eq(xr_hs_check(buf, len, XR_MSG_AUTH, sizeof(xr_auth)), -1);
  /* A HELLO header announcing 1 MiB is refused at its 12th byte. */
  xr_hdr big = {.magic = XR_MAGIC, .type = XR_MSG_HELLO, .len = 1u << 20};
  memcpy(buf, &big, sizeof big);
  ck_assert_int_eq(xr_hs_check(buf, 8, XR_MSG_HELLO, sizeof h), 0);
  ck_assert_int_eq(xr_hs_check(buf, sizeof big, XR_MSG_HELLO, sizeof h), -1);
  /* Sealed or other flags, a wrong magic at its first byte. */
  xr_hdr fl = {.magic = XR_MAGIC, .type = XR_MSG_HELLO, .flags = XR_HDR_SEALED, .len = sizeof h};
  memcpy(buf, &fl, sizeof fl);
  ck_assert_int_eq(xr_hs_check(buf, sizeof fl, XR_MSG_HELLO, sizeof h), -1);
  buf[0] ^= 1;
  ck_assert_int_eq(xr_hs_check(buf, 1, XR_MSG_HELLO, sizeof h), -1);
}
END_TEST

/* Sealed frames may carry the tag beyond XR_MAX_PAYLOAD; unknown flag
 * bits are protocol errors. */
START_TEST(frame_flags_and_sealed_limit) {
  xr_hdr h = {.magic = XR_MAGIC, .type = XR_MSG_STATE, .flags = 4, .len = 16};
  xr_hdr o;
  const uint8_t *pl;
  size_t used;
  memcpy(buf, &h, sizeof h);
  ck_assert_int_eq(xr_frame(buf, sizeof h + 16, &o, &pl, &used), -1);
  h.flags = XR_HDR_SEALED;
  h.len = XR_MAX_PAYLOAD + XR_SEAL_BYTES;
  memcpy(buf, &h, sizeof h);
  ck_assert_int_eq(xr_frame(buf, sizeof h, &o, &pl, &used), 0); /* needs more: allowed size */
  h.len++;
  memcpy(buf, &h, sizeof h);
  ck_assert_int_eq(xr_frame(buf, sizeof h, &o, &pl, &used), -1);
  h.flags = 0;
  h.len = XR_MAX_PAYLOAD + 1;
  memcpy(buf, &h, sizeof h);
  ck_assert_int_eq(xr_frame(buf, sizeof h, &o, &pl, &used), -1);
}
END_TEST

/* Text from a peer: a forged log line, terminal escapes, C1 controls,
 * invalid UTF-8 and bidi overrides are defused; a story's indented lines
 * stay as they are. */
START_TEST(sanitize_peer_text) {
  char out[256];
  /* A story: kept byte for byte. */
  const char *story = "deadlock:\n  comm 1 (2 ranks):\n    rank 0 waits";
  xr_sanitize_text(out, sizeof out, story, true);
  ck_assert_str_eq(out, story);
  /* A forged finding header and an a2acheck stderr line: indented. */
  xr_sanitize_text(out, sizeof out,
                   "x\n[2025-01-01T00:00:00] error group.deadlock  (finding #9)\na2acheck: ok", true);
  ck_assert_str_eq(out, "x\n  [2025-01-01T00:00:00] error group.deadlock  (finding #9)\n  a2acheck: ok");
  /* Escapes, CR, DEL, tab. */
  xr_sanitize_text(out, sizeof out, "a\x1b[2Jb\rc\x7f\td", true);
  ck_assert_str_eq(out, "a?[2Jb?c? d");
  /* Single-line: newlines become spaces. */
  xr_sanitize_text(out, sizeof out, "f+0x1 (lib)\n[fake] error", false);
  ck_assert_str_eq(out, "f+0x1 (lib) [fake] error");
  /* UTF-8: valid kept; C1 CSI (U+009B), overlong, surrogate, bidi override
   * and line separator replaced; a truncated sequence too. */
  xr_sanitize_text(out, sizeof out, "\xc3\xa9\xc2\x9b\xc0\xaf\xed\xa0\x80\xe2\x80\xae\xe2\x80\xa8\xe2\x82", false);
  ck_assert_str_eq(out, "\xc3\xa9??????????"); /* 1 + 2 + 3 + 1 + 1 + 2 */
  /* Truncation keeps a terminated string inside cap. */
  char small[8];
  ck_assert_uint_eq(xr_sanitize_text(small, sizeof small, "0123456789", false), 7);
  ck_assert_str_eq(small, "0123456");
  ck_assert_uint_le(xr_sanitize_text(small, sizeof small, "ab\ncd\nef", true), 7);
  ck_assert_uint_eq(strlen(small), xr_sanitize_text(small, sizeof small, "ab\ncd\nef", true));
}
END_TEST

/* Random bytes never crash the parser (run under ASan in the sanitizer
 * build) and almost never parse. */
START_TEST(fuzz_random_bytes) {
  srand(1234);
  uint8_t *b = malloc(4096);
  for (int it = 0; it < 20000; it++) {
    size_t n = (size_t)(rand() % 4096);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rand();
    if (n >= 4 && (it & 1)) {
      uint32_t m = XR_MAGIC;
      memcpy(b, &m, 4); /* get past the magic half the time */
      if (n >= 8) { uint16_t t = (uint16_t)(1 + rand() % (XR_MSG__COUNT - 1)); memcpy(b + 4, &t, 2); }
      if (n >= 12) { uint32_t l = (uint32_t)(rand() % 4096); memcpy(b + 8, &l, 4); }
    }
    xr_hdr hdr;
    const uint8_t *pl;
    size_t used;
    if (xr_frame(b, n, &hdr, &pl, &used) == 1) {
      ck_assert_uint_le(used, n);
      xr_verdict v;
      xr_procstate st;
      xr_op ops[8];
      uint32_t k;
      if (xr_get_state(&hdr, pl, &st) == 0) xr_state_free(&st);
      (void)xr_get_verdict(&hdr, pl, &v);
      (void)xr_get_ops(&hdr, pl, ops, 8, &k);
      (void)xr_check_payload(&hdr, pl);
    }
  }
  free(b);
}
END_TEST

/* Every file of the corpus (seeds and crash regressions) runs through the
 * fuzz entry, each seed then in 300 single-byte mutations; the seeds are what
 * xr_fuzz_seeds writes today (regenerate with --write-seeds when the
 * protocol changes), and the two session seeds get past the handshake. */
START_TEST(fuzz_corpus_replay) {
  DIR *d = opendir(A2A_FUZZ_CORPUS_DIR);
  ck_assert_msg(d != NULL, "no corpus at %s", A2A_FUZZ_CORPUS_DIR);
  char tmp[] = "/tmp/a2a-seeds-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(tmp));
  int nseeds = xr_fuzz_seeds(tmp);
  ck_assert_int_gt(nseeds, 0);
  int files = 0, fresh = 0;
  srand(99);
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[1024], gen[1024];
    snprintf(path, sizeof path, "%s/%s", A2A_FUZZ_CORPUS_DIR, e->d_name);
    snprintf(gen, sizeof gen, "%s/%s", tmp, e->d_name);
    size_t n = 0, gn = 0;
    uint8_t *b = a2a_test_slurp(path, &n), *g = a2a_test_slurp(gen, &gn);
    ck_assert_ptr_nonnull(b);
    if (g) {
      ck_assert_msg(gn == n && memcmp(g, b, n) == 0,
                    "seed %s is stale: regenerate with test_xrank_proto --write-seeds %s",
                    e->d_name, A2A_FUZZ_CORPUS_DIR);
      fresh++;
      unlink(gen);
    }
    xr_fuzz_one(b, n);
    if (!strcmp(e->d_name, "coord-session") || !strcmp(e->d_name, "client-session"))
      ck_assert_msg(xr_fuzz_dispatched >= 3, "%s stops at the handshake", e->d_name);
    /* Seeds are mutated; crash regressions (regress-*) replay as they are
     * (some are slow on purpose: big communicators). */
    for (int m = 0; m < 300 && n > 1 && strncmp(e->d_name, "regress-", 8); m++) {
      size_t at = 1 + (size_t)rand() % (n - 1);
      uint8_t old = b[at];
      b[at] = (uint8_t)rand();
      xr_fuzz_one(b, n);
      xr_fuzz_one(b, at); /* truncated there */
      b[at] = old;
    }
    free(b);
    free(g);
    files++;
  }
  closedir(d);
  rmdir(tmp);
  ck_assert_int_eq(fresh, nseeds); /* every seed is in the corpus */
  ck_assert_int_ge(files, nseeds);
}
END_TEST

/* Per-rank CUDA_VISIBLE_DEVICES (SLURM, containers): every rank's GPU is
 * ordinal 0, but they are different GPUs and must not compare equal. */
START_TEST(visible_device_identity) {
  ck_assert_int_eq(xr_visible_device(NULL, 0), 0);
  ck_assert_int_eq(xr_visible_device(NULL, 3), 3);
  ck_assert_int_eq(xr_visible_device(NULL, -1), -1);
  ck_assert_int_eq(xr_visible_device("3", 0), 3);
  ck_assert_int_eq(xr_visible_device("5", 0), 5);
  ck_assert_int_ne(xr_visible_device("3", 0), xr_visible_device("5", 0));
  ck_assert_int_eq(xr_visible_device("4,6, 7", 2), 7);
  ck_assert_int_eq(xr_visible_device("4,6", 2), -1);
  ck_assert_int_eq(xr_visible_device("", 0), -1);
  int32_t a = xr_visible_device("GPU-1a2b,GPU-3c4d", 0), b = xr_visible_device("GPU-3c4d", 0);
  ck_assert_int_ne(a, b);
  ck_assert_int_eq(xr_visible_device("GPU-3c4d", 0), xr_visible_device("GPU-1a2b,GPU-3c4d", 1));
  ck_assert_int_ne(a, 0);
  ck_assert(a & 0x40000000);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("xrank_proto");
  TCase *t = tcase_create("proto");
  tcase_set_timeout(t, 30);
  tcase_add_test(t, frame_round_trip_fixed);
  tcase_add_test(t, truncated_needs_more_every_prefix);
  tcase_add_test(t, bad_magic_type_and_oversize);
  tcase_add_test(t, wrong_sizes_and_strings);
  tcase_add_test(t, commflush_round_trip_and_malformed);
  tcase_add_test(t, verdict_round_trip_and_corruption);
  tcase_add_test(t, state_round_trip_and_bad_slices);
  tcase_add_test(t, handshake_exact_size);
  tcase_add_test(t, frame_flags_and_sealed_limit);
  tcase_add_test(t, sanitize_peer_text);
  tcase_add_test(t, fuzz_random_bytes);
  tcase_add_test(t, visible_device_identity);
  tcase_add_test(t, fuzz_corpus_replay);
  suite_add_tcase(s, t);
  return s;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
    int n = xr_fuzz_seeds(argv[2]);
    printf("%d seeds written to %s\n", n, argv[2]);
    return n > 0 ? 0 : 1;
  }
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
