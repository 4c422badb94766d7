/* xr_internal.h - the process side of cross-rank checking (xrank/xr_*.c):
 * one background thread per process that drains the xrank analyzer's
 * queue, tracks launch units and their completion, talks to the
 * coordinators as a client (xr_chan.c), and - in the process that created
 * an ncclUniqueId - hosts a coordinator (xr_coord.c) running the matcher and
 * the wait-for graph.
 *
 * Threading: every function here runs on the background thread, except the
 * entry points of xr_process_port (xrank_rec.h), which take g_xr_mu briefly.
 * Nothing here calls an intercepted function: CUDA goes through a2a_hostsvc
 * (REAL), sockets are not intercepted.
 */
#ifndef A2A_XR_INTERNAL_H
#define A2A_XR_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a_core.h"
#include "xrank.h"
#include "xrank_auth.h"
#include "xrank_proto.h"
#include "xrank_rec.h"

/* ---- byte buffers and non-blocking socket I/O (xr_chan.c) ---- */

typedef struct xr_buf {
  uint8_t *p;
  size_t len, cap;
} xr_buf;

/* Make room for `more` bytes; false when that would exceed max. */
bool xr_buf_reserve(xr_buf *b, size_t more, size_t max);
void xr_buf_consume(xr_buf *b, size_t n);
void xr_buf_free(xr_buf *b);
/* Write as much of out as the socket takes. -1 on a dead socket. */
int xr_sock_write(int fd, xr_buf *out);
/* Read what is available into in (bounded by max; in starts at a frame
 * boundary). 0 also when in is full but holds a complete first frame (the
 * caller consumes frames and reads on). -1 on end of file (errno 0), an
 * error (errno set) or a first frame over max (EMSGSIZE). */
int xr_sock_read(int fd, xr_buf *in, size_t max);
/* Append one message; false if the buffer would exceed its bound. */
bool xr_out_msg(xr_buf *out, xr_msgtype type, const void *payload, size_t plen);

/* An authenticated connection's output: out holds whole unsealed messages
 * as the encoders wrote them, wire the sealed bytes not yet taken by the
 * socket. Seal everything in out into wire, then write what the socket
 * takes. XR_WRITE_DEAD (errno set) on a dead socket, XR_WRITE_FULL when the
 * peer has left XR_OUT_MAX unread. */
enum { XR_WRITE_OK = 0, XR_WRITE_DEAD = -1, XR_WRITE_FULL = -2 };
int xr_write_sealed(int fd, xr_buf *out, xr_buf *wire, xr_mac *tx);

#define XR_OUT_MAX (32u << 20)   /* a peer that reads nothing is dropped */
#define XR_IN_MAX (XR_MAX_PAYLOAD + 64 * 1024)
/* TCP_USER_TIMEOUT of every side-channel socket: data unacknowledged this
 * long (a dead host or path; the coordinator pings every second so there
 * always is some) ends the connection as lost. */
#define XR_USER_TIMEOUT_MS 10000u

/* A finding from the background thread (xr_chan.c): the call site, if
 * any, is the operation's own; echo also writes it to stderr. */
void xr_report(a2a_check_id check, a2a_severity sev, const a2a_comm *c, uint64_t site,
               const char *msg, bool echo);

/* ---- the coordinator (xr_coord.c) ---- */

/* Create the listener if needed (any thread, under g_xr_mu), bound to the
 * address `ip4` (network order; 0 = 127.0.0.1). Fills *rec for an id.
 * Returns 0 on success. */
int xr_coord_listen(uint32_t ip4, uint16_t port_net, const uint8_t *token, xr_idrec *rec);
bool xr_coord_hosting(void);
/* Poll set: fills up to max entries, returns how many. */
size_t xr_coord_pollfds(struct pollfd *pfd, size_t max);
/* After poll: accept, read, dispatch, write. */
void xr_coord_io(const struct pollfd *pfd, size_t n, uint64_t now_ns);
/* Periodic work: flush answers, deadlock/hang evaluation. */
void xr_coord_tick(uint64_t now_ns);
/* Live authenticated client connections other than our own process. */
size_t xr_coord_other_clients(void);
/* Before this process ends on a verdict: keep serving (deliver the
 * verdicts queued for the others, read what they send so closing does not
 * reset the connections) until the other clients left or max_ns passed. */
void xr_coord_linger(uint64_t max_ns);
/* Before this process ends on a2acheck's failure policy (check: the
 * finding that ends it): tell every other client, as an info verdict of
 * a2acheck.no-coordinator, that the coordinator ends with it - so that
 * its closing is not reported as a lost coordinator (xr_chan.c conn_end). */
void xr_coord_announce_end(const char *check);
/* Clients still to be served: other processes' connections not closed and
 * without BYE, and connections still authenticating. */
size_t xr_coord_peers_left(void);
/* The lingering process (a grandchild forked by the host at its normal
 * exit while peers are left, docs/design.md "The coordinator outlives its
 * host"): keep only the coordinator's descriptors, drop device mappings,
 * default signals, serve until no peer is left or max_ns passed, then
 * _exit(0). Reports nothing. Never returns. */
_Noreturn void xr_coord_serve_detached(uint64_t max_ns);
/* The host, once the lingering process took over: close its copies of the
 * coordinator's sockets and stop hosting. */
void xr_coord_release(void);
/* At exit, when connections failed to authenticate: one finding with the
 * totals (a2acheck.auth-failed). */
void xr_coord_report_totals(void);
/* Fork child: forget (close) everything inherited. */
void xr_coord_after_fork_child(void);

/* ---- shared ---- */
extern A2A_HIDDEN pthread_mutex_t g_xr_mu;
uint64_t xr_now_ns(void);
/* n unpredictable bytes (getrandom; /dev/urandom before the pool is
 * ready): secrets and nonces. */
void xr_random(uint8_t *out, size_t n);

#endif /* A2A_XR_INTERNAL_H */
