#!/usr/bin/env python3
"""The whole process of one small command-line call: wall and peak memory.

What a user of the command line waits for is the process, not the call's
own seconds: opening the engine (the store, the pool, the OpenCL device
list) is part of it. This runs one call in fresh processes, the builds
given with --qs taking turns (and, with --no-opencl, each build once more
with OpenCL off), each build with its own cache directory and store, after
one warm-up process each (which fills the cache: kernels, device list).

    bench/cli_process.py --qs build/tools/quicksilver \\
        --qs OTHER/build/tools/quicksilver --runs 15 --no-opencl

Prints, per variant, the process wall (min / median, ms) and the peak
resident memory (median, MB), with the load average before and after.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def one(cmd, env):
    """Wall seconds and peak RSS (kB) of one process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors='replace')
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        sys.exit(f'{" ".join(cmd)}: exit {p.returncode}: {err}')
    return wall, ru.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--qs', action='append', required=True,
                    help='a quicksilver binary (repeat to compare builds)')
    ap.add_argument('--runs', type=int, default=15)
    ap.add_argument('--no-opencl', action='store_true',
                    help='also run each build with --no-opencl')
    ap.add_argument('--method', default='roberts_cross')
    ap.add_argument('--size', default='10x256x256', help='FRAMESxROWSxCOLS')
    ap.add_argument('--impl', help='force this implementation (--impl)')
    args = ap.parse_args()
    f, r, c = (int(x) for x in args.size.split('x'))
    work = tempfile.mkdtemp(prefix='qs-cli-')
    img = os.path.join(work, 'in.tif')
    subprocess.run([args.qs[0], '--db', ':memory:', 'simulate', '-o', img,
                    '--frames', str(f), '--rows', str(r), '--cols', str(c)],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    variants = []
    for k, qs in enumerate(args.qs):
        for off in ([False, True] if args.no_opencl else [False]):
            name = f'{qs}{" --no-opencl" if off else ""}'
            env = dict(os.environ,
                       QUICKSILVER_CACHE_DIR=os.path.join(work, f'cache{k}'))
            cmd = [qs, '--db', os.path.join(work, f'{k}.db')]
            cmd += ['--no-opencl'] if off else []
            cmd += ['run', args.method, img, '-o',
                    os.path.join(work, 'out.tif'), '-q']
            cmd += ['--impl', args.impl] if args.impl else []
            variants.append((name, cmd, env))
    for _, cmd, env in variants:  # warm-up: caches filled, stores made
        one(cmd, env)
    load0 = os.getloadavg()[0]
    walls = {v[0]: [] for v in variants}
    rss = {v[0]: [] for v in variants}
    for _ in range(args.runs):
        for name, cmd, env in variants:
            w, m = one(cmd, env)
            walls[name].append(w)
            rss[name].append(m)
    load1 = os.getloadavg()[0]
    print(f'{args.method} {args.size}'
          f'{" --impl " + args.impl if args.impl else ""}, '
          f'{args.runs} processes per variant, '
          f'turns taken; load average {load0:.2f} before, {load1:.2f} after')
    print('| variant | process wall min / median (ms) | peak RSS median (MB) |')
    print('|---|---|---|')
    for name, _, _ in variants:
        w = walls[name]
        print(f'| {name} | {min(w) * 1e3:.1f} / '
              f'{statistics.median(w) * 1e3:.1f} | '
              f'{statistics.median(rss[name]) / 1024:.1f} |')
    subprocess.run(['rm', '-rf', work])


if __name__ == '__main__':
    main()
