#!/usr/bin/env python3
"""perf_check.py - assert the numbers in a2acheck's perf.* findings.

    perf_check.py DIR CLAUSE...

DIR is searched recursively for *.jsonl logs. Each CLAUSE is

    CHECK[@RANK]:PATH OP VALUE

CHECK      a check name (perf.small-messages, perf.summary, ...)
RANK       only findings of that rank
PATH       a key of the finding's "details" object; dots go deeper and
           name[k=v,k2=v2] picks the element of a list whose keys match,
           e.g. buckets[op=AlltoAll,bucket_lo_bytes=1048576].busbw_gbps
OP         =  equal (numbers compared exactly, strings as text)
           ~  within 20% of VALUE (relative)
           >= <=  bounds
VALUE      a number, an arithmetic expression of numbers (+ - * / ( ) and
           exponents like 1e9), or a string for =

or

    count:CHECK[@RANK]=N

exactly N findings (JSONL records) of CHECK (of that rank) in all the logs.

Every other clause needs at least one matching finding, and must hold for
all of them. Exit status 0 when all hold, 1 otherwise (the values are printed), 2
for usage errors or unreadable logs. Python 3, stdlib only.
"""
import json
import os
import re
import sys

TOL = 0.20


def load(d):
    recs = []
    for root, _, files in os.walk(d):
        for f in files:
            if f.endswith(".jsonl"):
                with open(os.path.join(root, f)) as fh:
                    for line in fh:
                        line = line.strip()
                        if line:
                            recs.append(json.loads(line))
    return recs


def num(text):
    if not re.fullmatch(r"[0-9eE+\-*/(). ]+", text):
        raise ValueError("not a numeric expression: %r" % text)
    return float(eval(text, {"__builtins__": {}}, {}))


def walk(obj, path):
    for part in path.split("."):
        m = re.fullmatch(r"([A-Za-z_0-9]+)(?:\[(.*)\])?", part)
        if not m or not isinstance(obj, dict) or m.group(1) not in obj:
            return None
        obj = obj[m.group(1)]
        if m.group(2) is not None:
            conds = [c.split("=", 1) for c in m.group(2).split(",")]
            found = None
            for el in obj if isinstance(obj, list) else []:
                if all(str(el.get(k)) == v for k, v in conds):
                    found = el
                    break
            if found is None:
                return None
            obj = found
    return obj


def check(recs, clause):
    c = re.fullmatch(r"count:([a-z0-9.\-]+)(?:@(\d+))?=(\d+)", clause)
    if c:
        name, rank, want = c.group(1), c.group(2), int(c.group(3))
        got = sum(1 for r in recs if r.get("check") == name and
                  (rank is None or r.get("rank") == int(rank)))
        print("%s %s: %d record(s)" % ("ok  " if got == want else "FAIL", clause, got))
        return got == want
    m = re.fullmatch(r"([a-z0-9.\-]+)(?:@(\d+))?:((?:[^=~<>\[]|\[[^\]]*\])+)(=|~|>=|<=)(.+)",
                     clause)
    if not m:
        print("bad clause: %s" % clause)
        return False
    name, rank, path, op, value = m.groups()
    sel = [r for r in recs if r.get("check") == name and
           (rank is None or r.get("rank") == int(rank))]
    if not sel:
        print("FAIL %s: no %s finding%s" % (clause, name, "" if rank is None else " of rank " + rank))
        return False
    ok = True
    for r in sel:
        got = walk(r.get("details") or {}, path)
        if got is None:
            print("FAIL %s: no %s in rank %s's details: %s" % (clause, path, r.get("rank"),
                                                             json.dumps(r.get("details"))[:800]))
            ok = False
            continue
        if op == "=" and not isinstance(got, (int, float)):
            good = str(got) == value
            want = value
        else:
            want = num(value)
            got = float(got)
            if op == "=":
                good = got == want
            elif op == "~":
                good = abs(got - want) <= TOL * abs(want)
            elif op == ">=":
                good = got >= want
            else:
                good = got <= want
        print("%s %s: rank %s has %s (want %s %s)" % ("ok  " if good else "FAIL", clause,
                                                      r.get("rank"), got, op, want))
        ok = ok and good
    return ok


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    try:
        recs = load(argv[1])
    except (OSError, ValueError) as e:
        print("cannot read logs: %s" % e)
        return 2
    ok = True
    for clause in argv[2:]:
        try:
            ok = check(recs, clause) and ok
        except ValueError as e:
            print("bad clause %s: %s" % (clause, e))
            return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
