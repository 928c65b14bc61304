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

With --suite it runs the selection suite instead: the cases of SUITE
(eSRRF at 20x256x256, 100x64x64 and on the real mito stack, rgc and
shift_magnify at two sizes each, roberts_cross), each with and without
OpenCL, CALLS automatic calls in a fresh store each time (after three
unmeasured calls per engine that fill the device runtime's kernel caches),
for the engine
of --qs and, side by side at the same moment, for that of --before (an
older build). The reference is the forced median of every implementation
(the eSRRF and rgc cases: the vector paths and OpenCL, plus whatever an
engine chose; the scalar ones take seconds to minutes there), REPEATS
interleaved rounds. For calls 1-10 and 11-30 it reports the mean decision
regret (the chosen implementation's forced median over the best one's,
"~" where the chosen one's fastest forced run is not slower than the
best's median: within the noise), the calibration share of the calls'
time, the regret of call 10's choice, whether every candidate within 2x
of the best was tried by call 5 (on a slice of a call's input or on a
call, as #31 counts a try; the JSON also lists those not yet run on a
whole call), and the candidates no call or slice
ever ran to its end ("(stopped)": its slice runs were stopped at
calibration's time limit, which showed it could not win).

Usage: regret.py [--qs PATH] [--work DIR] [--quick] [--cases I,J,...]
                 [--repeats N] [--warm N] [--cold N] [--seed N]
                 [--spread N]
                 [--json FILE] [--markdown FILE]
       regret.py --suite [--quick] [--before PATH] [--calls N]
                 [--repeats N] [--cases I,J,...] [--json FILE]
                 [--markdown FILE]
(--suite --quick: the cases of SUITE_QUICK, one a method.) One sequence
of calls per engine and mode is one sample, and a case of a few
milliseconds or less varies from one fresh store to the next: with
--sequences N each engine and mode runs N sequences (fresh stores, the
engines and modes taking turns), and the table gives the medians over
them, the worst calibration shares in brackets, the most frequent choice
at call 10 and how many sequences missed there.
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
# --suite --quick: one case a method (eSRRF twice: a simulated and the
# real stack), half the suite's time
SUITE_QUICK = [0, 2, 3, 5, 7]

REAL = os.path.join(HERE, '..', 'tests', 'data', 'real',
                    'musical_cardiomyoblast_mito_100f.tif')
FAST_ESRRF = ['fused_avx2', 'fused_vec', 'opencl']
# rgc's scalar paths take 4-80 s a run on the suite's inputs, 50-100x the
# vector ones: forced only where an engine chose them
FAST_RGC = ['vec', 'avx2', 'avx512', 'opencl']
# The selection suite (--suite): (method, input, parameters, forced-only
# implementations or None for all). An input is a simulated size, the
# real stack, or ('rgc', size): rgc's three inputs made from a simulated
# stack as eSRRF makes them (gradients magnified 2M, the image M).
SUITE = [
    ('esrrf', (20, 256, 256), ['--magnification', '5'], FAST_ESRRF),
    ('esrrf', (100, 64, 64), ['--magnification', '5'], FAST_ESRRF),
    ('esrrf', REAL, ['--magnification', '5'], FAST_ESRRF),
    ('rgc', ('rgc', (4, 64, 64)), ['--magnification', '5'], FAST_RGC),
    ('rgc', ('rgc', (10, 128, 128)), ['--magnification', '5'], FAST_RGC),
    ('shift_magnify', (10, 256, 256), ['--magnification-row', '2',
                                       '--magnification-col', '2'], None),
    ('shift_magnify', (16, 512, 512), ['--magnification-row', '2',
                                       '--magnification-col', '2'], None),
    ('roberts_cross', (10, 256, 256), [], None),
]
# Reasons of calls that gather evidence rather than use it: the settled
# warm choice is the last warm call with another reason.
LEARNING = ('verification', 'exploration')


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


def qs_run(qs, db, method, inp, out, params, impl=None, opts=()):
    inp = inp if isinstance(inp, list) else [inp]
    cmd = [qs, '--db', db, *opts, 'run', method, *inp, '-o', out, '--json',
           '-q']
    cmd += params
    if impl:
        cmd += ['--impl', impl]
    t0 = time.monotonic()
    j = json.loads(run(cmd))
    j['process_seconds'] = time.monotonic() - t0
    return j


def impls_of(qs, method, opts=()):
    j = json.loads(run([qs, '--db', ':memory:', *opts, 'methods', method,
                        '--json']))
    return [i['name'] for i in j[0]['impls'] if i['available']]


def fresh(db):
    for suffix in ('', '-wal', '-shm'):
        try:
            os.unlink(db + suffix)
        except FileNotFoundError:
            pass


# Forced runs of cases whose best median is under CHEAP_S seconds take at
# least CHEAP_ROUNDS rounds.
CHEAP_S = 0.02
CHEAP_ROUNDS = 15


def one_choice(a, b, tie=0.05):
    """Whether implementation a is one choice with b on this machine, from
    runs paired by round (same moment, same load), as --spread reads them:
    a's median paired ratio to b within `tie`, or a beating b in at least
    a third of the rounds."""
    pairs = list(zip(a, b))
    if not pairs:
        return False
    ratio = statistics.median(x / y for x, y in pairs if y > 0)
    wins = sum(x < y for x, y in pairs)
    return ratio <= 1 + tie or 3 * wins >= len(pairs)


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


def suite_input(qs, work, spec):
    """Path(s) of a suite case's input(s), made once in WORK."""
    if isinstance(spec, str):
        return spec
    if spec[0] != 'rgc':
        return stack(qs, work, spec)
    f, r, c = spec[1]
    base = stack(qs, work, spec[1])
    tag = f'{f}x{r}x{c}'
    gc, gr, img = (os.path.join(work, f'rgc_{n}_{tag}.tif')
                   for n in ('gc', 'gr', 'img'))
    if not os.path.exists(img):
        g0, g1 = (os.path.join(work, f'rc_{n}_{tag}.tif') for n in 'cr')
        run([qs, '--db', ':memory:', 'run', 'roberts_cross', base, '-o', g0,
             '-o', g1, '-q'])
        for src, dst in ((g0, gc), (g1, gr)):
            run([qs, '--db', ':memory:', 'run', 'shift_magnify', src, '-o',
                 dst, '--magnification-row', '10', '--magnification-col',
                 '10', '-q'])
        run([qs, '--db', ':memory:', 'run', 'shift_magnify', base, '-o', img,
             '--magnification-row', '5', '--magnification-col', '5', '-q'])
    return [gc, gr, img]


def tried_in_store(qs, db, method, status='ok'):
    """Implementations with a run of that status in the store ('cancelled':
    a calibration slice run stopped at its time limit)."""
    j = json.loads(run([qs, '--db', db, '--json', 'db', 'list', '--method',
                        method, '--limit', '1000000']))
    return {x['impl'] for x in j if x['status'] == status}


def suite_case(engines, work, method, spec, params, only, calls, repeats,
               rng, sequences=1):
    """One case: CALLS automatic calls per engine and OpenCL mode in a
    fresh store each (SEQUENCES times, the engines and modes taking turns),
    interleaved forced runs for the reference."""
    inp = suite_input(engines[-1][1], work, spec)
    out = os.path.join(work, 'out.tif')
    db = os.path.join(work, 'suite.db')
    modes = [('opencl', ()), ('no-opencl', ('--no-opencl',))]
    # warm-up, not measured: the device runtime's on-disk caches (PoCL
    # compiles a work-group function per new global size) filled for the
    # sizes the engines run, as on any machine after its first day
    for (name, qs) in engines:
        fresh(db)
        for _ in range(3):
            qs_run(qs, db, method, inp, out, params)
        # the OpenCL implementations' programs built once (a runtime's
        # first build of a program, 0.7-1.3 s under load, is a cost of
        # the machine's first day, not of each fresh store)
        for impl in impls_of(qs, method):
            if impl.startswith('opencl'):
                qs_run(qs, db, method, inp, out, params, impl)
    seqs = {}
    for _ in range(sequences):
        for (name, qs) in engines:
            for mode, opts in modes:
                fresh(db)
                seq = []
                for k in range(calls):
                    j = qs_run(qs, db, method, inp, out, params, opts=opts)
                    seq.append({'impl': j['impl'], 'reason': j['reason'],
                                's': j['seconds'],
                                'calib': j['calibration_seconds'],
                                # the OpenCL runtimes loaded for a listed
                                # device: in neither s nor calib
                                'opencl_load': j.get('load_seconds', 0),
                                'load': os.getloadavg()[0]})
                    if k == 4:
                        tried5 = tried_in_store(qs, db, method)
                seqs.setdefault((name, mode), []).append({
                    'calls': seq, 'tried5': sorted(tried5),
                    'tried': sorted(tried_in_store(qs, db, method)),
                    'stopped': sorted(tried_in_store(qs, db, method,
                                                     'cancelled'))})
                fresh(db)
    qs = engines[-1][1]
    avail = impls_of(qs, method)
    chosen = {c['impl'] for vs in seqs.values() for v in vs
              for c in v['calls']}
    forced_set = [i for i in avail if only is None or i in chosen or
                  any(i.startswith(o) for o in only)]
    fresh(db)
    runs = interleaved(qs, db, method, inp, out, params, forced_set,
                       repeats, rng)
    # calls of a few milliseconds vary by tens of per cent from one
    # process to the next: more rounds, so that the paired test below
    # can tell implementations apart (each round costs little there)
    if min(statistics.median(t) for t in runs.values()) < CHEAP_S and \
            repeats < CHEAP_ROUNDS:
        more = interleaved(qs, db, method, inp, out, params, forced_set,
                           CHEAP_ROUNDS - repeats, rng)
        for i in runs:
            runs[i] += more[i]
    fresh(db)
    med = {i: statistics.median(t) for i, t in runs.items()}
    rows = []
    for (name, mode), vs in seqs.items():
        pool = {i: t for i, t in med.items()
                if mode == 'opencl' or not i.startswith('opencl')}
        best = min(pool, key=pool.get)
        oracle = pool[best]

        def regret(impl):
            return med[impl] / oracle - 1 if impl in med else float('nan')

        def noise(impl):
            return impl in runs and (
                min(runs[impl]) <= statistics.median(runs[best]) or
                one_choice(runs[impl], runs[best]))

        def span(v, a, b):
            part = v['calls'][a:b]
            if not part:
                return float('nan'), float('nan'), False
            r = statistics.mean(regret(c['impl']) for c in part)
            tot = sum(c['s'] + c['calib'] for c in part)
            cal = sum(c['calib'] for c in part) / tot if tot else 0
            within = all(noise(c['impl']) or regret(c['impl']) <= 0.05
                         for c in part)
            return r, cal, within
        near = [i for i in pool if med[i] <= 2 * oracle]
        avail_mode = [i for i in avail
                      if mode == 'opencl' or not i.startswith('opencl')]
        each = []
        for v in vs:
            r10, c10, n10 = span(v, 0, 10)
            r30, c30, n30 = span(v, 10, calls)
            call10 = v['calls'][min(9, len(v['calls']) - 1)]['impl']
            each.append({
                'regret_1_10': r10, 'regret_11_30': r30,
                'calib_1_10': c10, 'calib_11_30': c30,
                'call10': call10, 'call10_regret': regret(call10),
                'call10_noise': noise(call10),
                'near_not_tried_by_5': sorted(set(near) - set(v['tried5'])),
                'near_not_run_by_5': sorted(
                    set(near) - {c['impl'] for c in v['calls'][:5]}),
                'calls': v['calls'], 'tried5': v['tried5']})
        # over the sequences: medians, the worst, the misses at call 10 (a
        # choice beyond the noise and over 5 %); what any of them left
        # untried by call 5, what none of them ever tried
        def mid(key):
            return statistics.median(x[key] for x in each)
        misses = [x for x in each if not x['call10_noise'] and
                  x['call10_regret'] > 0.05]
        tens = [x['call10'] for x in each]
        call10 = max(set(tens), key=tens.count)
        tried = set.union(*(set(v['tried']) for v in vs))
        stopped = set.union(*(set(v['stopped']) for v in vs))
        rows.append({
            'method': method, 'input': label_of(spec), 'engine': name,
            'mode': mode, 'oracle': best, 'oracle_s': oracle,
            'regret_1_10': mid('regret_1_10'),
            'regret_11_30': mid('regret_11_30'),
            'calib_1_10': mid('calib_1_10'),
            'calib_11_30': mid('calib_11_30'),
            'calib_1_10_worst': max(x['calib_1_10'] for x in each),
            'calib_11_30_worst': max(x['calib_11_30'] for x in each),
            'call10': call10, 'call10_regret': regret(call10),
            'call10_noise': noise(call10),
            'call10_misses': len(misses), 'sequences': len(each),
            'near_not_tried_by_5': sorted(set().union(
                *(x['near_not_tried_by_5'] for x in each))),
            'near_not_run_by_5': sorted(set().union(
                *(x['near_not_run_by_5'] for x in each))),
            # "(stopped)": only its slice runs stopped at their limit
            'never_tried': [i + (' (stopped)' if i in stopped else '')
                            for i in sorted(set(avail_mode) - tried)],
            'load': statistics.mean(c['load'] for v in vs
                                    for c in v['calls']),
            'calls': vs[0]['calls'], 'tried5': vs[0]['tried5'],
            'each': each})
    return rows, {'forced': runs}


def label_of(spec):
    if isinstance(spec, str):
        return os.path.basename(spec).split('_')[1] + ' (real)'
    if spec[0] == 'rgc':
        return 'x'.join(map(str, spec[1]))
    return 'x'.join(map(str, spec))


def suite_table(rows, load):
    out = [f'load average at start {load[0]:.2f}, at end {load[1]:.2f} '
           f'({os.cpu_count()} cores); fresh store per engine and mode; '
           'regret against the best forced median ("~": within the noise '
           'of the forced runs: the chosen one\'s fastest run within the '
           'best one\'s median, or one choice with it in runs paired by '
           'round, as --spread reads them; cases under '
           f'{CHEAP_S * 1e3:g} ms take {CHEAP_ROUNDS} rounds)', '',
           '| method | input | OpenCL | engine | best (median s) '
           '| regret 1-10 | regret 11-30 | call 10: choice, regret '
           '| calib 1-10 | calib 11-30 | within 2x, not tried by call 5 '
           '| never tried | load |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    many = any(r.get('sequences', 1) > 1 for r in rows)
    if many:
        out[0] += ('; SEQUENCES fresh stores per engine and mode: medians '
                   'over them, the worst in brackets, and at call 10 the '
                   'most frequent choice and how many sequences missed '
                   '(beyond the noise and over 5 %)')
    for r in rows:
        mark = '~' if r['call10_noise'] else ''

        def worst(key):
            return (f" ({pct(r[key + '_worst'])})" if many else '')
        miss = (f", misses {r['call10_misses']}/{r['sequences']}"
                if many else '')
        out.append(
            f"| {r['method']} | {r['input']} | "
            f"{'yes' if r['mode'] == 'opencl' else 'no'} | {r['engine']} | "
            f"{r['oracle']} ({r['oracle_s']:.4g}) | {pct(r['regret_1_10'])} "
            f"| {pct(r['regret_11_30'])} | {r['call10']} "
            f"{mark}{pct(r['call10_regret'])}{miss} | "
            f"{pct(r['calib_1_10'])}{worst('calib_1_10')} | "
            f"{pct(r['calib_11_30'])}{worst('calib_11_30')} | "
            f"{', '.join(r['near_not_tried_by_5']) or '-'} | "
            f"{', '.join(r['never_tried']) or '-'} | {r['load']:.1f} |")
    return '\n'.join(out) + '\n'


def suite_main(a):
    engines = ([('before', a.before)] if a.before else []) + \
        [('after' if a.before else 'engine', a.qs)]
    pick = ([int(x) for x in a.cases.split(',')] if a.cases else
            SUITE_QUICK if a.quick else range(len(SUITE)))
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    rng = random.Random(a.seed)
    rows, forced = [], []
    for i in pick:
        method, spec, params, only = SUITE[i]
        print(f'suite: {method} {label_of(spec)}', file=sys.stderr,
              flush=True)
        r, f = suite_case(engines, a.work, method, spec, params, only,
                          a.calls, a.repeats, rng, a.sequences)
        rows += r
        forced.append({'method': method, 'input': label_of(spec), **f})
        text = suite_table(rows, (load0, os.getloadavg()[0]))
        if a.markdown:  # after every case: a partial table survives
            with open(a.markdown, 'w') as fh:
                fh.write(text)
        if a.json:
            with open(a.json, 'w') as fh:
                json.dump({'rows': rows, 'forced': forced}, fh, indent=1)
    sys.stdout.write(suite_table(rows, (load0, os.getloadavg()[0])))
    print(f'suite: {time.monotonic() - t0:.0f} s', file=sys.stderr)


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
    ap.add_argument('--suite', action='store_true',
                    help='the selection suite (SUITE), see above')
    ap.add_argument('--before', help='--suite: an older build of the CLI '
                    'to run side by side')
    ap.add_argument('--sequences', type=int, default=1,
                    help='--suite: fresh-store sequences per engine and '
                    'mode (medians and the worst over them)')
    ap.add_argument('--calls', type=int, default=30,
                    help='--suite: automatic calls per engine and mode')
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.suite:
        return suite_main(a)
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
