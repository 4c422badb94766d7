#!/usr/bin/env python3
"""check_api.py - the ctests that keep the simulator's API complete (the
export rule of docs/simulator.md):

  exports     the simulated libcudart.so.13 exports exactly the reference
              list (tests/sim/cudart/libcudart.exports), names and version
              nodes, and everything any real libcudart.so.13 given with
              --real-cudart exports; the simulated libcuda.so.1 exports
              exactly the reference driver list (tests/sim/driver/
              libcuda.exports) and everything the real stub libcuda.so
              given with --real-cuda exports.
  docs        the generated lists in docs/simulator.md match the tables.
  prototypes  the simulator's sources compile against the reference
              headers (--include), so every definition, generated stubs
              included, is checked against NVIDIA's newest declarations.
              Exits 77 (skipped) when the headers are absent, unless CI=true.

Exit status 0 pass, 1 fail, 77 skipped.
"""
import argparse
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_api  # noqa: E402

SKIP = 77


def fail(msg):
    print('FAIL: ' + msg)
    return 1


def reference(path, with_version):
    out = {}
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        f = line.split()
        out[f[0]] = f[1] if with_version else ''
    return out


def api_names(exp, prefixes):
    return {n: v for n, v in exp.items() if n.startswith(prefixes)}


def compare(label, sim, ref, exact):
    bad = 0
    missing = sorted(set(ref) - set(sim))
    if missing:
        bad = fail('%s: %d missing: %s' % (label, len(missing), ' '.join(missing[:40])))
    wrong = sorted(n for n in ref if n in sim and sim[n] != ref[n])
    if wrong:
        bad = fail('%s: wrong version node: %s' % (label, ' '.join('%s@%s (want %s)' % (n, sim[n] or 'none', ref[n])
                                                                  for n in wrong[:20])))
    extra = sorted(set(sim) - set(ref)) if exact else []
    if extra:
        bad = fail('%s: %d not in the reference: %s' % (label, len(extra), ' '.join(extra[:40])))
    if not bad:
        print('ok: %s (%d functions)' % (label, len(ref)))
    return bad


def cmd_exports(a):
    rc = 0
    sim_rt = api_names(gen_api.exports(os.path.join(a.sim_lib_dir, 'libcudart.so.13')), ('cuda', '__cuda'))
    rc |= compare('libcudart.so.13 vs the reference list', sim_rt,
                  reference(os.path.join(gen_api.SIM, 'cudart', 'libcudart.exports'), True), True)
    for lib in a.real_cudart:
        if os.path.exists(lib):
            real = api_names(gen_api.exports(lib), ('cuda', '__cuda'))
            rc |= compare('libcudart.so.13 vs %s' % lib, sim_rt, real, False)
        else:
            print('note: %s not present, not compared' % lib)
    sim_cu = api_names(gen_api.exports(os.path.join(a.sim_lib_dir, 'libcuda.so.1')), ('cu',))
    sim_cu = {n: v for n, v in sim_cu.items() if not n.startswith('cuda')}
    rc |= compare('libcuda.so.1 vs the reference list', sim_cu,
                  reference(os.path.join(gen_api.SIM, 'driver', 'libcuda.exports'), False), True)
    for lib in a.real_cuda:
        if os.path.exists(lib):
            rc |= compare('libcuda.so.1 vs %s' % lib, sim_cu, api_names(gen_api.exports(lib), ('cu',)), False)
        else:
            print('note: %s not present, not compared' % lib)
    return rc


def cmd_docs(a):
    doc = os.path.join(gen_api.ROOT, 'docs', 'simulator.md')
    m = gen_api.DOCS_RE.search(open(doc).read())
    if not m:
        return fail('docs/simulator.md has no generated block')
    if m.group(0) != gen_api.docs_block():
        return fail('docs/simulator.md: the lists of unmodelled functions are out of date; '
                    'run tests/sim/tools/gen_api.py')
    print('ok: docs/simulator.md lists the tables')
    return 0


def cmd_prototypes(a):
    ref = [i for i in a.include if os.path.exists(os.path.join(i, 'cuda_runtime_api.h'))]
    if not ref:
        msg = 'reference CUDA headers not found (%s)' % ' '.join(a.include)
        if os.environ.get('CI') == 'true':
            return fail(msg + '; required in CI')
        print('SKIPPED: ' + msg + ': prototypes not checked against them')
        return SKIP
    flags = ['-fsyntax-only', '-std=gnu11', '-Wall', '-Werror=implicit-function-declaration']
    for i in ref + a.fallback_include:
        flags += ['-I', i]
    flags += ['-I', os.path.join(gen_api.SIM, 'include'), '-idirafter', gen_api.FALLBACK]
    rc = 0
    for sub in ('cudart', 'driver'):
        for src in sorted(glob.glob(os.path.join(gen_api.SIM, sub, '*.c'))):
            r = subprocess.run([a.cc] + flags + ['-I', os.path.join(gen_api.SIM, sub), src],
                               capture_output=True, text=True)
            if r.returncode:
                rc = fail('%s does not compile against %s:\n%s' % (os.path.relpath(src, gen_api.ROOT),
                                                                   ref[0], r.stderr[-4000:]))
    if not rc:
        print('ok: the simulator compiles against %s' % ref[0])
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    e = sub.add_parser('exports')
    e.add_argument('--sim-lib-dir', required=True)
    e.add_argument('--real-cudart', action='append', default=[])
    e.add_argument('--real-cuda', action='append', default=[])
    sub.add_parser('docs')
    p = sub.add_parser('prototypes')
    p.add_argument('--cc', default='cc')
    p.add_argument('--include', action='append', default=[])
    p.add_argument('--fallback-include', action='append', default=[])
    a = ap.parse_args()
    return {'exports': cmd_exports, 'docs': cmd_docs, 'prototypes': cmd_prototypes}[a.cmd](a)


if __name__ == '__main__':
    sys.exit(main())
