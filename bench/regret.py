#!/usr/bin/env python3
"""regret.py — the engine's regret, measured as a user meets it: one
`quicksilver run` process per call.

For every case (method, input size, parameters) of a sweep that crosses
the CPU/OpenCL and serial/threaded crossovers on this machine:
  1. cold: a fresh timing store, one automatic call (calibration
     included); COLD times over, each in a store of its own, since one
     process's first call varies as much as any single run (each cold
     figure is the median over the COLD calls, the worst one is printed
     too);
  2. warm: WARM more automatic calls in that store (what the engine learned
     from its own calls); the settled choice reported is the last call not
     made to gather evidence (reason "verification": a candidate known
     only by its model, predicted within 1.5x of the best; "exploration":
     a close candidate short of runs, an occasional revisit, a delayed
     favourite's rival). Keep WARM above twice the number of
     implementations; the mean regret over all warm calls is the cost of
     learning;
  3. forced: every available implementation (or, for a case that names
     some, those and every one the engine chose), REPEATS calls each, in
     that store, interleaved: REPEATS rounds, each running every
     implementation once in a shuffled order (seeded), so that a change of
     the machine's load falls on all of them alike; the oracle is the
     fastest median. Runs of one implementation here vary by tens of per
     cent from one process to the next (the threaded schedules of the
     memory-bound methods overlap completely), so a regret is only
     "resolved" when the chosen implementation's fastest run is slower
     than the oracle's median; otherwise it is within the noise of REPEATS
     runs, marked with a tilde, and the summary counts both.
Per case it reports the oracle, the cold and the warm choice, regret =
chosen's forced median / oracle - 1 (the decision's cost), the cold call's
regret including calibration ((run + calibration) / oracle - 1), the
calibration's share of the cold call, and the cold run's own time over the
same implementation's forced median (interference, cold caches; the
engine provides a large output's pages before the clock starts, so the
host's cost of fresh memory, which back-to-back processes escape by
reusing what the previous one freed, is not in either time). A summary
gives medians and worst cases. Measured, never asserted: numbers depend on
the machine and its load (printed with the table).

With --spread N it measures only whether the implementations of the
cases differ at all: N interleaved rounds of forced runs (one process per
run, a shuffled order per round), and per implementation the min,
quartiles, and, paired within each round (same moment, same load), the
median ratio to the implementation with the fastest median and how often
it beat that one. Implementations whose paired ratio stays near 1 and win
about half the rounds are one choice on this machine: no engine can
choose among them better than chance, and no regret among them is real.

Usage: regret.py [--qs PATH] [--work DIR] [--quick] [--cases I,J,...]
                 [--repeats N] [--warm N] [--cold N] [--seed N]
                 [--spread N]
                 [--json FILE] [--markdown FILE]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (method, frames x rows x cols, parameters): chosen to cross the
# crossovers (serial below about 64k pixels, threaded above, OpenCL's fixed
# costs on a CPU device) for the three cheap-to-heavy methods.
CASES = [
    ('roberts_cross', (1, 64, 64), []),
    ('roberts_cross', (10, 256, 256), []),
    ('roberts_cross', (50, 512, 512), []),
    ('roberts_cross', (20, 1024, 1024), []),
    ('shift_magnify', (1, 64, 64), ['--magnification-row', '2',
                                    '--magnification-col', '2']),
    ('shift_magnify', (10, 256, 256), ['--magnification-row', '2',
                                       '--magnification-col', '2']),
    ('shift_magnify', (16, 512, 512), ['--magnification-row', '2',
                                       '--magnification-col', '2']),
    ('esrrf', (20, 64, 64), ['--magnification', '5']),
    ('esrrf', (100, 64, 64), ['--magnification', '5']),
    ('esrrf', (10, 256, 256), ['--magnification', '5']),
    # over 1 s: calibration's share of a long call (goal: at most 10 %).
    # Forced: only the vector paths besides what the engine chose (the
    # scalar paths take minutes here and are 10-20x slower).
    ('esrrf', (50, 256, 256), ['--magnification', '5'],
     ['fused_avx2', 'fused_vec']),
]
QUICK = [0, 1, 2, 4, 5, 7, 10]
# Reasons of calls that gather evidence rather than use it: the settled
# warm choice is the last warm call with another reason.
LEARNING = ('verification', 'exploration')


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


def qs_run(qs, db, method, inp, out, params, impl=None):
    cmd = [qs, '--db', db, 'run', method, inp, '-o', out, '--json', '-q']
    cmd += params
    if impl:
        cmd += ['--impl', impl]
    t0 = time.monotonic()
    j = json.loads(run(cmd))
    j['process_seconds'] = time.monotonic() - t0
    return j


def impls_of(qs, method):
    j = json.loads(run([qs, '--db', ':memory:', 'methods', method,
                        '--json']))
    return [i['name'] for i in j[0]['impls'] if i['available']]


def fresh(db):
    for suffix in ('', '-wal', '-shm'):
        try:
            os.unlink(db + suffix)
        except FileNotFoundError:
            pass


def resolved(chosen, oracle):
    """Whether the chosen implementation's runs are slower than the
    oracle's beyond their overlap: its fastest over the oracle's median."""
    return min(chosen) > statistics.median(oracle)


def stack(qs, work, size):
    """The simulated input of a size (made once in WORK)."""
    f, r, c = size
    inp = os.path.join(work, f'in_{f}x{r}x{c}.tif')
    if not os.path.exists(inp):
        run([qs, 'simulate', '-o', inp, '--frames', str(f), '--rows',
             str(r), '--cols', str(c), '-q'])
    return inp


def interleaved(qs, db, method, inp, out, params, impls, rounds, rng):
    """Forced runs' seconds per implementation: ROUNDS rounds, each
    running every implementation once in a shuffled order."""
    runs = {i: [] for i in impls}
    for _ in range(rounds):
        order = impls[:]
        rng.shuffle(order)
        for impl in order:
            runs[impl].append(
                qs_run(qs, db, method, inp, out, params, impl)['seconds'])
    return runs


def case(qs, work, method, size, params, repeats, warm, rng, only=None,
         ncold=1):
    f, r, c = size
    inp = stack(qs, work, size)
    out = os.path.join(work, 'out.tif')
    db = os.path.join(work, 'regret.db')
    colds = []
    for _ in range(max(1, ncold)):
        fresh(db)
        colds.append(qs_run(qs, db, method, inp, out, params))
    warms = [qs_run(qs, db, method, inp, out, params) for _ in range(warm)]
    chosen = {x['impl'] for x in colds} | {w['impl'] for w in warms}
    impls = [i for i in impls_of(qs, method)
             if not only or i in only or i in chosen]
    runs = interleaved(qs, db, method, inp, out, params, impls, repeats,
                       rng)
    forced = {i: statistics.median(t) for i, t in runs.items()}
    oracle_impl = min(forced, key=forced.get)
    oracle = forced[oracle_impl]
    settled = [x for x in warms if x['reason'] not in LEARNING]
    w = settled[-1] if settled else (warms[-1] if warms else cold)
    # what the warm calls cost while learning, settled or not
    learn = (statistics.mean(forced[x['impl']] for x in warms) / oracle - 1
             if warms else 0.0)
    # each cold call's figures; the row gives their medians, and the cold
    # choice is the one whose decision regret is the median (the middle
    # call), so that its choice, regret and noise mark agree
    each = [{'impl': x['impl'], 'reason': x['reason'],
             'run_s': x['seconds'], 'calib_s': x['calibration_seconds'],
             'process_s': x['process_seconds'],
             'regret': forced[x['impl']] / oracle - 1,
             'regret_total': (x['seconds'] + x['calibration_seconds'])
             / oracle - 1,
             'calib_share': x['calibration_seconds'] /
             (x['seconds'] + x['calibration_seconds']),
             'vs_warm': x['seconds'] / forced[x['impl']]} for x in colds]
    mid = sorted(each, key=lambda x: x['regret'])[(len(each) - 1) // 2]
    med = {k: statistics.median(x[k] for x in each)
           for k in ('run_s', 'calib_s', 'process_s', 'regret_total',
                     'calib_share', 'vs_warm')}
    row = {
        'method': method, 'size': f'{f}x{r}x{c}', 'oracle': oracle_impl,
        'oracle_s': oracle,
        'cold': mid['impl'], 'cold_reason': mid['reason'],
        'cold_choices': sorted(x['impl'] for x in each),
        'cold_run_s': med['run_s'],
        'cold_calib_s': med['calib_s'],
        'cold_process_s': med['process_s'],
        'warm': w['impl'], 'load': os.getloadavg()[0],
        'oracle_min_s': min(runs[oracle_impl]),
        'cold_resolved': resolved(runs[mid['impl']], runs[oracle_impl]),
        'warm_resolved': resolved(runs[w['impl']], runs[oracle_impl]),
        'runs': runs,
        'colds': each,
        'cold_regret': mid['regret'],
        'cold_regret_worst': max(x['regret'] for x in each),
        'cold_regret_total': med['regret_total'],
        'warm_regret': forced[w['impl']] / oracle - 1,
        'warm_mean_regret': learn,
        'warm_reasons': [x['reason'] for x in warms],
        'calib_share': med['calib_share'],
        'cold_vs_warm': med['vs_warm'],
        'cold_vs_warm_worst': max(x['vs_warm'] for x in each),
        'forced': forced,
    }
    fresh(db)
    return row


def spread(qs, work, method, size, params, rounds, rng, only=None):
    """Interleaved forced runs: the statistics of each implementation and
    its per-round ratio to the one with the fastest median."""
    f, r, c = size
    inp = stack(qs, work, size)
    out = os.path.join(work, 'out.tif')
    db = os.path.join(work, 'spread.db')
    fresh(db)
    impls = [i for i in impls_of(qs, method) if not only or i in only]
    load0 = os.getloadavg()[0]
    runs = interleaved(qs, db, method, inp, out, params, impls, rounds, rng)
    fresh(db)
    best = min(impls, key=lambda i: statistics.median(runs[i]))
    lines = [f'{method} {f}x{r}x{c}: {rounds} interleaved rounds, load '
             f'{load0:.1f} to {os.getloadavg()[0]:.1f}', '',
             '| implementation | min s | q1 | median | q3 | paired ratio '
             f'to {best} (median, q1-q3) | rounds it beat {best} |',
             '|---|---|---|---|---|---|---|']
    for i in impls:
        q = statistics.quantiles(runs[i], n=4) if rounds > 1 else \
            [runs[i][0]] * 3
        ratio = [a / b for a, b in zip(runs[i], runs[best])]
        rq = statistics.quantiles(ratio, n=4) if rounds > 1 else \
            [ratio[0]] * 3
        wins = sum(a < b for a, b in zip(runs[i], runs[best]))
        lines.append(f'| {i} | {min(runs[i]):.4g} | {q[0]:.4g} | '
                     f'{q[1]:.4g} | {q[2]:.4g} | {rq[1]:.3f} '
                     f'({rq[0]:.3f}-{rq[2]:.3f}) | '
                     f'{"-" if i == best else f"{wins}/{rounds}"} |')
    return '\n'.join(lines) + '\n', runs


def pct(x):
    return f'{100 * x:.0f} %'


def table(rows, load):
    out = [f'load average at start {load[0]:.2f}, at end {load[1]:.2f} '
           f'({os.cpu_count()} cores)', '',
           'Forced runs interleaved; regret of medians, "~" where the '
           'chosen one\'s fastest run is not slower than the oracle\'s '
           'median (within the noise of the runs).', '',
           '| method | size | load | oracle | oracle median s (min) '
           '| cold choice | cold regret '
           '| cold incl. calib | calib s | calib share | cold run / warm '
           '| warm choice | warm regret | warm calls\' mean regret |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']

    def choices(r):
        c = r.get('cold_choices', [r['cold']])
        return ', '.join(f'{i}' + (f' ×{c.count(i)}' if len(c) > 1 else '')
                         for i in sorted(set(c), key=c.index))

    def mark(r, key):
        return ('' if r[key.replace('regret', 'resolved')] else '~') + \
            pct(r[key])
    for r in rows:
        out.append(
            f"| {r['method']} | {r['size']} | {r['load']:.1f} | "
            f"{r['oracle']} | "
            f"{r['oracle_s']:.4g} ({r['oracle_min_s']:.4g}) | "
            f"{choices(r)} ({r['cold_reason']}) | "
            f"{mark(r, 'cold_regret')} | {pct(r['cold_regret_total'])} | "
            f"{r['cold_calib_s']:.3g} | {pct(r['calib_share'])} | "
            f"{r['cold_vs_warm']:.2f}x | {r['warm']} | "
            f"{mark(r, 'warm_regret')} | {pct(r['warm_mean_regret'])} |")
    if rows:
        def summary(key):
            v = [r[key] for r in rows]
            return (f'median {pct(statistics.median(v))}, worst '
                    f'{pct(max(v))}')
        def beyond(key):
            v = [r[key] for r in rows if r[key.replace('regret',
                                                       'resolved')]]
            return (f'{len(v)} of {len(rows)} beyond the noise'
                    + (f', worst of those {pct(max(v))}' if v else ''))
        out += ['', f"cold decision regret: {summary('cold_regret')} "
                f"({beyond('cold_regret')})",
                f"warm decision regret: {summary('warm_regret')} "
                f"({beyond('warm_regret')})",
                f"cold regret incl. calibration: "
                f"{summary('cold_regret_total')}",
                f"warm calls' mean regret (learning included): "
                f"{summary('warm_mean_regret')}",
                "calibration share of calls over 1 s: " + (', '.join(
                    f"{r['method']} {r['size']} {pct(r['calib_share'])}"
                    for r in rows if r['cold_run_s'] > 1) or 'none'),
                f"cold run / warm run of the same implementation: median "
                f"{statistics.median(r['cold_vs_warm'] for r in rows):.2f}x,"
                f" worst {max(r['cold_vs_warm'] for r in rows):.2f}x"]
        if any(len(r.get('colds', [])) > 1 for r in rows):
            out += [f"single cold calls ({len(rows[0]['colds'])} a case, the "
                    "figures above are their medians): worst decision "
                    f"regret {pct(max(r['cold_regret_worst'] for r in rows))}"
                    ", worst cold run / warm "
                    f"{max(r['cold_vs_warm_worst'] for r in rows):.2f}x"]
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--qs', default=os.path.join(
        HERE, '..', 'build', 'tools', 'quicksilver'))
    ap.add_argument('--work', default='/tmp/qs_regret')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--spread', type=int, metavar='N',
                    help='only N interleaved rounds of forced runs per case')
    ap.add_argument('--seed', type=int, default=1,
                    help='order of the interleaved forced runs')
    ap.add_argument('--warm', type=int, default=12)
    ap.add_argument('--cold', type=int, default=3,
                    help='cold calls per case, each in a fresh store')
    ap.add_argument('--cases', help='comma-separated indices into CASES '
                    '(overrides --quick)')
    ap.add_argument('--json')
    ap.add_argument('--markdown')
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    pick = ([int(x) for x in a.cases.split(',')] if a.cases else
            QUICK if a.quick else range(len(CASES)))
    cases = [CASES[i] for i in pick]
    load0 = os.getloadavg()[0]
    rng = random.Random(a.seed)
    if a.spread:
        texts, data = [], []
        for method, size, params, *only in cases:
            print(f'spread: {method} {size}', file=sys.stderr, flush=True)
            text, runs = spread(a.qs, a.work, method, size, params,
                                a.spread, rng, only[0] if only else None)
            sys.stdout.write(text + '\n')
            texts.append(text)
            data.append({'method': method, 'size': size, 'runs': runs})
        if a.markdown:
            with open(a.markdown, 'w') as f:
                f.write('\n'.join(texts))
        if a.json:
            with open(a.json, 'w') as f:
                json.dump(data, f, indent=1)
        return
    rows = []
    for method, size, params, *only in cases:
        print(f'regret: {method} {size}', file=sys.stderr, flush=True)
        rows.append(case(a.qs, a.work, method, size, params, a.repeats,
                         a.warm, rng, only[0] if only else None, a.cold))
    text = table(rows, (load0, os.getloadavg()[0]))
    sys.stdout.write(text)
    if a.markdown:
        with open(a.markdown, 'w') as f:
            f.write(text)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(rows, f, indent=1)


if __name__ == '__main__':
    main()
