#!/usr/bin/env python3
"""xrank_netns.py - the side channel across a real network link that fails.

Creates two network namespaces joined by a veth pair (10.213.N.1/24 and
.2/24), runs xrank_check.py with the launcher - and the coordinator it hosts
- in the first (NCCL_SOCKET_IFNAME=its veth end) and every rank in the
second (XRANK_NETNS_RANKS), so each rank's side channel crosses the link;
the scenario's XRANK_FAULT takes the link down mid-run. The simulator's
ranks still meet in shared memory, as NCCL's own transport (InfiniBand, a
second NIC) may survive the loss of the bootstrap network. Everything is
removed afterwards.

    xrank_netns.py [xrank_check.py arguments...]

Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2. Without them it says
so and exits 77 (ctest: skipped), except under CI=true, where it fails.
Python 3, stdlib only.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


def unavailable(why):
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        print("FAIL: network namespaces are required in CI: " + why)
        return 1
    print("SKIPPED (not run): this test needs to create network namespaces and a veth pair "
          "(root with CAP_NET_ADMIN and iproute2): " + why)
    return 77


def main():
    ip = shutil.which("ip")
    if not ip:
        return unavailable("no `ip` command (iproute2)")
    if os.geteuid() != 0:
        return unavailable("not root")
    n = os.getpid() % 250 + 1
    nc, nr = "a2a%d-c" % os.getpid(), "a2a%d-r" % os.getpid()
    vc, vr = "a2ac%d" % os.getpid(), "a2ar%d" % os.getpid()
    vc, vr = vc[:15], vr[:15]
    made = []
    try:
        for ns in (nc, nr):
            r = sh(ip, "netns", "add", ns, check=False)
            if r.returncode != 0:
                return unavailable("`ip netns add` failed: " + r.stdout.strip())
            made.append(ns)
        steps = [
            (ip, "link", "add", vc, "netns", nc, "type", "veth", "peer", "name", vr, "netns", nr),
            (ip, "-n", nc, "addr", "add", "10.213.%d.1/24" % n, "dev", vc),
            (ip, "-n", nr, "addr", "add", "10.213.%d.2/24" % n, "dev", vr),
            (ip, "-n", nc, "link", "set", vc, "up"),
            (ip, "-n", nr, "link", "set", vr, "up"),
            (ip, "-n", nc, "link", "set", "lo", "up"),
            (ip, "-n", nr, "link", "set", "lo", "up"),
        ]
        for st in steps:
            r = sh(*st, check=False)
            if r.returncode != 0:
                return unavailable("`%s` failed: %s" % (" ".join(st[1:]), r.stdout.strip()))
        # The ranks must reach the coordinator across the link first.
        r = sh(ip, "netns", "exec", nr, "ping", "-c", "1", "-W", "2", "10.213.%d.1" % n, check=False)
        if r.returncode != 0 and shutil.which("ping"):
            print("FAIL: no connectivity across the veth pair: " + r.stdout.strip())
            return 1
        print("namespaces %s (coordinator, %s 10.213.%d.1) and %s (ranks, %s 10.213.%d.2)" %
              (nc, vc, n, nr, vr, n))
        args = [a.replace("{veth}", vc) for a in sys.argv[1:]]
        cmd = [ip, "netns", "exec", nc, sys.executable, os.path.join(HERE, "xrank_check.py")] + args + [
            "--env", "NCCL_SOCKET_IFNAME=" + vc, "--env", "XRANK_NETNS_RANKS=/run/netns/" + nr]
        sys.stdout.flush()
        return subprocess.run(cmd).returncode
    finally:
        for ns in made:
            sh(ip, "netns", "del", ns, check=False)


if __name__ == "__main__":
    sys.exit(main())
