/* xrank_proto.h - the cross-rank side channel's wire protocol: framing,
 * encoders and a strict parser. Pure C, no sockets (xrank/xr_chan.c does the
 * I/O), so every malformed input can be unit-tested.
 *
 * A message is a 12-byte header (magic, type, flags, payload length) and a
 * payload. The receiver never trusts a peer: a wrong magic, an unknown type,
 * a payload over XR_MAX_PAYLOAD or of the wrong size for its type, counts
 * that do not add up, or strings that are not NUL-terminated inside their
 * field are protocol errors, after which the connection is dropped. Nothing
 * a peer sends can make the parser read or write out of bounds.
 *
 * A connection starts with a handshake (HELLO, CHALLENGE, AUTH; unsealed,
 * each read only at its exact size) in which both sides prove that they
 * know the job's secret; every later message is sealed with a tag
 * (xrank_auth.h). Text a peer sends reaches a log only through
 * xr_sanitize_text. Fuzzed by xrank/fuzz_proto.c.
 */
#ifndef A2A_XRANK_PROTO_H
#define A2A_XRANK_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xrank.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_MAGIC 0x52583241u /* "A2XR" little-endian */
#define XR_MAX_PAYLOAD (1u << 20)  /* without the seal's tag */
#define XR_SEAL_BYTES 16             /* = XR_TAG_BYTES (xrank_auth.h) */
#define XR_MAX_OPS_PER_MSG 4096u
#define XR_MAX_TEXT 6000u
#define XR_MAX_NRANKS (1 << 20) /* communicator sizes on the wire (as the client caps them) */
#define XR_MAX_JSON 8000u

typedef enum xr_msgtype {
  XR_MSG_HELLO = 1,    /* client -> coordinator: nonce, pid, rank, host */
  XR_MSG_CHALLENGE,    /* coordinator -> client: nonce, proof (xrank_auth.h) */
  XR_MSG_AUTH,         /* client -> coordinator: proof */
  /* Sealed from here on (XR_HDR_SEALED). */
  XR_MSG_COMMREG,      /* xr_commreg */
  XR_MSG_OPS,          /* batch of xr_op */
  XR_MSG_SITE,         /* call-site address -> printable text */
  XR_MSG_COMMEND,      /* the rank finalized/destroyed a communicator */
  XR_MSG_STATE,        /* progress state (xr_procstate) */
  XR_MSG_BYE,          /* the process exits */
  XR_MSG_FLUSH,        /* client asks: tell me when my ops are all matched */
  XR_MSG_FLUSHED,      /* coordinator's answer */
  XR_MSG_VERDICT,      /* coordinator -> client: a finding to report */
  XR_MSG_COMMFLUSH,    /* client asks at ncclCommDestroy/Finalize: answer when
                          every verdict about this rank on this comm is sent */
  XR_MSG_COMMFLUSHED,  /* coordinator's answer (echoes comm, rank, seq) */
  XR_MSG_PING,         /* coordinator -> client, every second: keeps a dead
                          path detectable (TCP_USER_TIMEOUT needs unacked data) */
  XR_MSG__COUNT
} xr_msgtype;

/* Header flags. SEALED: the last XR_TAG_BYTES of the payload are its
 * message authentication tag (xrank_auth.h); every message after the
 * handshake carries one. Other bits are protocol errors. */
enum { XR_HDR_SEALED = 1 };

typedef struct xr_hdr {
  uint32_t magic;
  uint16_t type;
  uint16_t flags;
  uint32_t len; /* payload bytes (with the tag when sealed) */
} xr_hdr;
_Static_assert(sizeof(xr_hdr) == 12, "xr_hdr is a wire record");

#define XR_NONCE_BYTES 16
#define XR_PROOF_BYTES 32

typedef struct xr_hello {
  uint32_t version;
  uint32_t flags;                 /* 0 */
  uint8_t nonce[XR_NONCE_BYTES];  /* the client's, from getrandom */
  int32_t pid, grank;
  char host[64];
} xr_hello;
_Static_assert(sizeof(xr_hello) == 96, "xr_hello is a wire record");

typedef struct xr_challenge {
  uint32_t version;
  uint32_t pad;
  uint8_t nonce[XR_NONCE_BYTES];  /* the coordinator's */
  uint8_t proof[XR_PROOF_BYTES];  /* it knows the secret (xrank_auth.h) */
} xr_challenge;
_Static_assert(sizeof(xr_challenge) == 56, "xr_challenge is a wire record");

typedef struct xr_auth { uint8_t proof[XR_PROOF_BYTES]; } xr_auth;
typedef struct xr_ping { uint64_t n; } xr_ping;

typedef struct xr_site { uint64_t site; char text[120]; } xr_site;
typedef struct xr_commend { uint64_t comm; int32_t how, rank; } xr_commend;
typedef struct xr_bye { int32_t status, pad; } xr_bye;
typedef struct xr_flush { uint32_t token, pad; } xr_flush;
/* COMMFLUSH / COMMFLUSHED: rank >= 0, seq != 0 (the client's wait slot). */
typedef struct xr_commflush { uint64_t comm; int32_t rank; uint32_t seq; } xr_commflush;
_Static_assert(sizeof(xr_commflush) == 16, "xr_commflush is a wire record");

/* Verdict flags. */
enum { XR_VERDICT_FAIL = 1 /* the receiver applies the deadlock exit policy */ };

/* A decoded verdict (points into the payload). */
typedef struct xr_verdict {
  uint64_t comm;
  uint64_t site;        /* the receiving rank's own call site, or 0 */
  int32_t severity;     /* a2a_severity */
  uint32_t flags;       /* XR_VERDICT_* */
  int32_t check;        /* a2a_check_id; on the wire its name, and a name
                           that is not in the checks table is malformed */
  const char *text;     /* the message */
  const char *json;     /* details object or NULL */
  uint32_t rank_p1;     /* 1 + the receiver's rank in comm the verdict is
                           about (a process may host several ranks of one
                           communicator: its log names that one); 0: not
                           said (any of the process's ranks) */
} xr_verdict;

/* ---- encoders: append one message to buf[*len..cap). Return false (and
 * leave *len unchanged) when it does not fit. ---- */
bool xr_put(uint8_t *buf, size_t cap, size_t *len, xr_msgtype type,
            const void *payload, size_t plen);
bool xr_put_ops(uint8_t *buf, size_t cap, size_t *len, const xr_op *ops,
                uint32_t n);
bool xr_put_verdict(uint8_t *buf, size_t cap, size_t *len,
                    const xr_verdict *v);
/* STATE: the arrays of *st (alive/pid/grank/host are not sent: the
 * coordinator knows them from HELLO and the socket). */
bool xr_put_state(uint8_t *buf, size_t cap, size_t *len,
                  const xr_procstate *st);
/* Bytes xr_put_state needs for *st. */
size_t xr_state_bytes(const xr_procstate *st);

/* ---- device identity ---- */

/* The host-wide identity of CUDA device `ordinal` in a process whose
 * CUDA_VISIBLE_DEVICES is `cvd` (NULL: unset). Two processes on one host use
 * the same physical GPU only if these agree: with per-rank
 * CUDA_VISIBLE_DEVICES (SLURM, containers) every rank sees ordinal 0, yet
 * they are different GPUs. An integer entry maps to that integer; a UUID or
 * MIG entry maps to a hash of it (bit 30 set, so it never equals an
 * integer entry); an ordinal past the list, or a negative one, is -1
 * (unknown: never compared). */
int32_t xr_visible_device(const char *cvd, int ordinal);

/* ---- parser ---- */

/* Frame at the start of buf[0..len): returns 1 and sets *hdr and *payload
 * when a whole valid-looking frame is there (*used = its bytes), 0 when more
 * bytes are needed, -1 on a protocol error (bad magic, unknown type or flag,
 * payload over XR_MAX_PAYLOAD, plus the tag when sealed). A sealed frame's
 * *hdr and payload still include the tag: xr_unseal (xrank_auth.h) checks
 * and strips it before the payload is decoded. */
int xr_frame(const uint8_t *buf, size_t len, xr_hdr *hdr,
             const uint8_t **payload, size_t *used);

/* Before authentication a peer may send exactly one message of one type
 * and size (HELLO, then AUTH; the client expects CHALLENGE), unsealed.
 * buf[0..have) holds the first bytes received for it: 1 when all
 * sizeof(xr_hdr) + plen bytes are there and the header is exactly that,
 * 0 when more are needed (read at most the difference: nothing beyond the
 * message is ever read), -1 as soon as a byte received disagrees. */
int xr_hs_check(const uint8_t *buf, size_t have, uint16_t type, size_t plen);

/* ---- text from peers ---- */

/* Copy text a peer sent (verdict text, call sites, host names) into
 * dst[0..cap) so that it cannot forge or hide log lines or drive a
 * terminal: control characters, DEL, C1 controls, invalid UTF-8 and Unicode
 * line/paragraph separators and bidirectional overrides become '?'; a tab
 * becomes a space. With multiline, newlines are kept (stories are
 * indented lines) but every line after the first starts with at least two
 * spaces, so no line of a message can pass for a finding's header in the
 * text log ("[time] error ...") or for a line of a2acheck's own on stderr
 * ("a2acheck: ..."); without multiline a newline becomes a space.
 * Truncated to fit; returns the length. */
size_t xr_sanitize_text(char *dst, size_t cap, const char *src, bool multiline);

/* Validate a payload for its type (sizes, counts, strings). 0 if valid,
 * -1 otherwise. Fixed-size messages must have exactly their size. */
int xr_check_payload(const xr_hdr *hdr, const uint8_t *payload);

/* Typed decoders; each validates first and returns -1 on malformed input. */
int xr_get_fixed(const xr_hdr *hdr, const uint8_t *payload, void *out,
                 size_t size);      /* HELLO, WELCOME, COMMREG, SITE, ... */
/* OPS: copies at most max records into out (payloads need not be aligned). */
int xr_get_ops(const xr_hdr *hdr, const uint8_t *payload, xr_op *out,
               uint32_t max, uint32_t *n);
int xr_get_verdict(const xr_hdr *hdr, const uint8_t *payload, xr_verdict *v);
/* STATE: allocates one block holding *st's arrays; free with
 * xr_state_free. Returns -1 on malformed input (nothing allocated). */
int xr_get_state(const xr_hdr *hdr, const uint8_t *payload, xr_procstate *st);
void xr_state_free(xr_procstate *st);

#ifdef __cplusplus
}
#endif
#endif /* A2A_XRANK_PROTO_H */
