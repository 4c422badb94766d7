#!/usr/bin/env python3
"""xrank_attack.py - attacks on a2acheck's cross-rank side channel, as a
process on the same host would try them (loopback only, bounded in count
and time). Started by xrank_scenarios (XRANK_ATTACK) after the id exists;
prints "ready ..." on stdout once its attack is in place, then holds it
until SIGTERM (or exits when it has nothing left to hold). Python 3, stdlib.

    xrank_attack.py idle HOST PORT N [--reconnect]
        N connections that send nothing (issue 15, F2); --reconnect opens a
        new one for every one the coordinator closes, for the whole run.
    xrank_attack.py hello1m HOST PORT N
        N connections that each send a HELLO header announcing a 1 MiB
        payload and then up to 1 MiB - 1 bytes of it (F3).
    xrank_attack.py churn HOST PORT N
        N connect/close pairs as fast as possible, then exit (F4).
    xrank_attack.py hellos HOST PORT SECONDS
        for SECONDS, connections that send a valid HELLO and never answer
        the challenge (the most a process without the secret can do).
    xrank_attack.py fake-coord PORT legacy|v3
        bind 127.0.0.1:PORT before the ranks do and answer every
        connection as a coordinator that does not know the secret: legacy,
        the version-2 protocol's WELCOME and a VERDICT with the FAIL flag
        whose text forges log lines and terminal escapes (F1); v3, a
        CHALLENGE with a made-up proof, then the same verdict sealed with a
        made-up tag.
    xrank_attack.py stall-client HOST PORT TOKEN N
        an authenticated client (it knows the id's token, e.g. a process of
        the job gone bad) that sends N FLUSH requests and never reads a byte
        of the answers.
    xrank_attack.py junk-client HOST PORT TOKEN
        authenticated clients that each send one malformed message with a
        valid seal (or one frame with a wrong seal); each must be closed.

The wire layouts follow xrank/xrank_proto.h and xrank/xrank_auth.h (labels
include their terminating NUL, as sizeof does in C).
"""
import hashlib
import hmac
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

MAGIC = 0x52583241
HDR = struct.Struct("<IHHI")
# Protocol version 4 (XR_PROTO_VERSION, xrank.h) message types (xrank_proto.h).
PROTO = 4
HELLO, CHALLENGE, AUTH = 1, 2, 3
COMMREG, OPS, SITE, COMMEND, STATE, BYE, FLUSH, FLUSHED, VERDICT = range(4, 13)
SEALED = 1
L_COORD = b"a2acheck-xrank-v3 coordinator proof\0"
L_CLIENT = b"a2acheck-xrank-v3 client proof\0"
L_C2S = b"a2acheck-xrank-v3 client-to-coordinator key\0"

STOP = False


def on_term(sig, frm):
    global STOP
    STOP = True


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, 65536), hard))


def ready(msg):
    print("ready " + msg, flush=True)


def hold(socks, seconds=300):
    """Keep the sockets open until SIGTERM (bounded)."""
    t0 = time.time()
    while not STOP and time.time() - t0 < seconds:
        time.sleep(0.05)
    for s in socks:
        s.close()


def nb_connect(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect((host, port))
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        return None
    return s


def hello_bytes(nonce=None, pid=4242):
    nonce = nonce or os.urandom(16)
    body = struct.pack("<II16sii64s", PROTO, 0, nonce, pid, -1, b"attacker")
    return HDR.pack(MAGIC, HELLO, 0, len(body)) + body, body


def idle(host, port, n, reconnect):
    poller = select.poll()
    socks = {}
    opened = 0

    def add():
        s = nb_connect(host, port)
        if s:
            socks[s.fileno()] = s
            poller.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
        return 1 if s else 0

    for _ in range(n):
        opened += add()
    time.sleep(0.5)
    ready("idle %d connections opened" % opened)
    t0 = time.time()
    while not STOP and time.time() - t0 < 300:
        # An idle connection gets nothing from a coordinator: any event
        # means it was closed. With --reconnect, replace it at once.
        for fd, _ in poller.poll(50):
            s = socks.pop(fd, None)
            if s is None:
                continue
            poller.unregister(fd)
            s.close()
            if reconnect:
                opened += add()
    print("attack: idle opened %d connections in all" % opened, flush=True)
    for s in socks.values():
        s.close()


def hello1m(host, port, n):
    socks = []
    payload = HDR.pack(MAGIC, HELLO, 0, 1 << 20) + b"\x41" * ((1 << 20) - 1)
    sent_total = 0
    for _ in range(n):
        s = socket.socket()
        try:
            s.connect((host, port))
        except OSError:
            s.close()
            continue
        s.setblocking(False)
        sent = 0
        t0 = time.time()
        while sent < len(payload) and time.time() - t0 < 0.2:
            try:
                sent += s.send(payload[sent:sent + 65536])
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                break
        sent_total += sent
        socks.append(s)
    time.sleep(0.5)
    ready("hello1m %d connections, %d bytes sent" % (len(socks), sent_total))
    hold(socks)


def churn(host, port, n):
    done = 0
    t0 = time.time()
    for _ in range(n):
        s = socket.socket()
        try:
            s.connect((host, port))
            done += 1
        except OSError:
            pass
        s.close()
    ready("churn %d connect/close pairs in %.2f s" % (done, time.time() - t0))


def hellos(host, port, seconds):
    socks = []
    sent = 0
    t0 = time.time()
    said = False
    while not STOP and time.time() - t0 < seconds:
        s = nb_connect(host, port)
        if s:
            socks.append((s, time.time()))
        # Send the HELLO once connected; never answer the challenge.
        for s, _ in socks[-64:]:
            try:
                s.send(hello_bytes()[0])
                sent += 1
            except OSError:
                pass
        keep = []
        for s, t in socks:
            if time.time() - t > 3:
                s.close()
            else:
                keep.append((s, t))
        socks = keep
        if not said and sent >= 256:
            ready("hellos flood running")
            said = True
        time.sleep(0.001)
    if not said:
        ready("hellos flood running")
    print("attack: hellos sent %d" % sent, flush=True)
    for s, _ in socks:
        s.close()


FORGED = ("no progress for 1 s\n[2026-01-01T00:00:00.000Z] error size.p2p-mismatch  "
          "(finding #7, rank 0, thread 1)\n  FORGED: rank 0 sends 1 B to rank 1\x1b[2J\x1b[31m"
          "\na2acheck: FORGED summary: 0 distinct findings")


def legacy_verdict():
    # Version 2: WELCOME = 2, VERDICT = 11; vhead {u64 comm, u64 site, i32
    # sev, u32 flags, char check[48], u32 textlen, u32 jsonlen}.
    welcome = struct.pack("<II", 2, 0)
    text = FORGED.encode() + b"\0"
    vh = struct.pack("<QQiI48sIIII", 0, 0, 2, 1, b"group.deadlock", len(text), 0, 0, 0)
    return (HDR.pack(MAGIC, 2, 0, len(welcome)) + welcome +
            HDR.pack(MAGIC, 11, 0, len(vh) + len(text)) + vh + text)


def v3_answer():
    chal = struct.pack("<II16s32s", PROTO, 0, os.urandom(16), os.urandom(32))
    text = FORGED.encode() + b"\0"
    vh = struct.pack("<QQiI48sII", 0, 0, 2, 1, b"group.deadlock", len(text), 0)
    body = vh + text + os.urandom(16)
    return (HDR.pack(MAGIC, CHALLENGE, 0, len(chal)) + chal +
            HDR.pack(MAGIC, VERDICT, SEALED, len(body)) + body)


def fake_coord(port, mode):
    ls = socket.socket()
    ls.bind(("127.0.0.1", port))
    ls.listen(64)
    ls.settimeout(0.1)
    ready("fake coordinator on 127.0.0.1:%d (%s)" % (port, mode))
    conns, answered = [], 0
    t0 = time.time()
    while not STOP and time.time() - t0 < 300:
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        c.settimeout(1.0)
        try:
            c.recv(4096)  # the client's HELLO
            c.sendall(legacy_verdict() if mode == "legacy" else v3_answer())
            answered += 1
        except OSError:
            pass
        conns.append(c)
    print("attack: fake coordinator answered %d connections" % answered, flush=True)
    for c in conns:
        c.close()
    ls.close()


def authenticate(host, port, token_hex):
    """The client side of the handshake; returns (socket, c2s key)."""
    token = bytes.fromhex(token_hex)
    s = socket.create_connection((host, port), timeout=5)
    frame, hello = hello_bytes(pid=os.getpid())
    s.sendall(frame)
    got = b""
    while len(got) < HDR.size + 56:
        d = s.recv(HDR.size + 56 - len(got))
        if not d:
            raise SystemExit("attack: the coordinator closed the connection")
        got += d
    chal = got[HDR.size:]
    sn = chal[8:24]
    want = hmac.new(token, L_COORD + hello + sn, hashlib.sha256).digest()
    if not hmac.compare_digest(want, chal[24:56]):
        raise SystemExit("attack: the coordinator's proof is wrong (wrong token?)")
    proof = hmac.new(token, L_CLIENT + hello + chal, hashlib.sha256).digest()
    s.sendall(HDR.pack(MAGIC, AUTH, 0, 32) + proof)
    return s, hmac.new(token, L_C2S + hello[8:24] + sn, hashlib.sha256).digest()


def sealed(key, seq, mtype, body):
    hdr = HDR.pack(MAGIC, mtype, SEALED, len(body) + 16)
    return hdr + body + hmac.new(key, struct.pack("<Q", seq) + hdr + body,
                                 hashlib.sha256).digest()[:16]


def send_all(s, data, limit=2.0):
    t0 = time.time()
    while data and time.time() - t0 < limit:
        try:
            data = data[s.send(data):]
        except BlockingIOError:
            time.sleep(0.001)
        except OSError:
            return False
    return not data


def stall_client(host, port, token_hex, n):
    s, key = authenticate(host, port, token_hex)
    s.setblocking(False)
    sent = 0
    pending = b""
    for seq in range(n):
        pending += sealed(key, seq, FLUSH, struct.pack("<II", 1, 0))
        if len(pending) > 65536 or seq == n - 1:
            if not send_all(s, pending):
                break
            pending = b""
            sent = seq + 1
    ready("stall-client authenticated, %d FLUSH requests sent, reading nothing" % sent)
    hold([s])


def junk_client(host, port, token_hex):
    """Authenticated, then malformed messages with valid seals (a buggy or
    compromised process of the job), then a frame whose seal is wrong, each
    on its own connection: the coordinator must close each one."""
    junk = [
        (OPS, struct.pack("<II", 5000, 0) + b"\xff" * 48),            # count past the payload
        (STATE, b"\xff" * 24),                                          # counts that do not add up
        (COMMREG, struct.pack("<QQQiiiiiI", 1, 0, 0, 4, 9, 0, 0, 0, 0)),  # rank outside nranks
        (SITE, struct.pack("<Q", 7) + b"x" * 120),                      # text not terminated
        (VERDICT, b"\0" * 80),                                          # a client may not send it
    ]
    closed = 0
    for mtype, body in junk + [(None, None)]:
        s, key = authenticate(host, port, token_hex)
        if mtype is None:
            frame = sealed(key, 0, BYE, struct.pack("<ii", 0, 0))
            frame = frame[:-1] + bytes([frame[-1] ^ 1])                 # wrong seal
        else:
            frame = sealed(key, 0, mtype, body)
        s.sendall(frame)
        s.settimeout(2)
        try:
            while True:
                d = s.recv(4096)
                if not d:
                    closed += 1
                    break
        except socket.timeout:
            pass
        except OSError:
            closed += 1
        s.close()
    ready("junk-client: the coordinator closed %d of %d connections" % (closed, len(junk) + 1))
    if closed != len(junk) + 1:
        print("attack: FAIL: a malformed message did not close its connection", flush=True)


def main():
    signal.signal(signal.SIGTERM, on_term)
    raise_nofile()
    a = sys.argv[1:]
    if not a:
        print(__doc__)
        return 2
    mode = a[0]
    if mode == "idle":
        idle(a[1], int(a[2]), int(a[3]), "--reconnect" in a)
    elif mode == "hello1m":
        hello1m(a[1], int(a[2]), int(a[3]))
    elif mode == "churn":
        churn(a[1], int(a[2]), int(a[3]))
    elif mode == "hellos":
        hellos(a[1], int(a[2]), float(a[3]))
    elif mode == "fake-coord":
        fake_coord(int(a[1]), a[2])
    elif mode == "stall-client":
        stall_client(a[1], int(a[2]), a[3], int(a[4]))
    elif mode == "junk-client":
        junk_client(a[1], int(a[2]), a[3])
    else:
        print("unknown mode " + mode, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
