/* xrank_harness.h - the launcher side of the side channel's attack and
 * fault tests (tests/e2e/xrank.cmake, issue 15), used by xrank_scenarios.c.
 * Every knob is an environment variable of the launcher, so one scenario
 * runs clean, attacked or faulted:
 *
 *   XRANK_NOFILE=N     the launcher's RLIMIT_NOFILE soft limit (the
 *                      coordinator lives in it: F2 needs a real limit)
 *   XRANK_ATTACK=CMD   a shell command started once the ids exist, with
 *                      {host} {port} {token} replaced by the coordinator
 *                      record of the first id (or, with stripped ids, the
 *                      port of A2ACHECK_COORDINATOR); the launcher waits for
 *                      its "ready" line, starts the ranks, and stops it
 *                      (SIGTERM) when they are done
 *   XRANK_MEASURE=1    the launcher prints "metric NAME VALUE" lines: its
 *                      descriptors and RSS before the attack, under it and at
 *                      the end, its CPU use in the second after "ready", and
 *                      how many of 64 open() calls failed under it
 *   XRANK_FAULT=F      when rank 0 reaches step 50: kill_coord (SIGKILL the
 *                      process hosting the coordinator), stop_coord
 *                      (SIGSTOP it), kill_rank:R (SIGKILL rank R), or
 *                      cmd:SHELL (run it: e.g. take a link down); prints
 *                      "metric fault_epoch T" (CLOCK_REALTIME seconds)
 *   XRANK_NETNS_RANKS=PATH  every rank enters this network namespace
 *                      (setns) right after the fork
 *
 * Prints are line-buffered on stdout, read by tests/e2e/xrank_check.py.
 */
#ifndef XRANK_HARNESS_H
#define XRANK_HARNESS_H

#include <nccl.h>
#include <sys/types.h>

/* Before anything else: XRANK_NOFILE. */
void xh_limits(void);
/* After the ids exist: XRANK_ATTACK (returns its pid, 0 without one,
 * -1 when it failed or never got ready) and the measurements around it. */
pid_t xh_attack_start(const ncclUniqueId *id);
/* In each rank right after the fork. 0, or -1 if it cannot. */
int xh_rank_enter(void);
/* Whether XRANK_FAULT asks for a progress signal. */
int xh_fault_wanted(void);
/* Carry out XRANK_FAULT; host is the coordinator's process (the helper,
 * or -1 when the launcher hosts it). Returns the rank killed, or -1. */
int xh_fault(pid_t host, const pid_t *ranks, int nranks, double t0);
/* After the ranks: stop the attacker, last measurements. */
void xh_end(pid_t attacker);

#endif
