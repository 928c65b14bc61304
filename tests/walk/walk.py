#!/usr/bin/env python3
"""The walk of one qs_esrrf_stream_push through the source files, as a reader
follows it: the call traced by tests/walk/trace.c (GCC's
-finstrument-functions; each caller-callee pair followed once, so a loop
over frames, pixels or chunks is read once), each function mapped to the
file that defines it (addr2line; an inline function of a header counts as
the header). The walk is the sequence of files the reader is in: entering
a function of another file is a stay there, returning from it comes back
to the caller's file (another stay). Counted: stays (the length of the
walk), files, and returns (stays in a file already left before); and the
same without leaf calls (a call of a function that calls nothing, such as
qs_image_wrap or qs_timer_ns, read by its name and not followed).

Usage:
  walk.py BUILD_DIR [IMPL] [--max-stays N] [--max-returns N] [--show]

BUILD_DIR is a build of the library with -finstrument-functions (debug):
  meson setup B -Dtests=false -Dpython=disabled -Dmpi=disabled \\
      -Dtiff=disabled -Dbuildtype=debug -Ddefault_library=shared \\
      -Dc_args=-finstrument-functions
  meson compile -C B quicksilver:shared_library
(`tools/walk` does all of it.) With limits, exits 1 past them (TAP out).
"""
import argparse
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("impl", nargs="?")
ap.add_argument("--max-stays", type=int)
ap.add_argument("--max-returns", type=int)
ap.add_argument("--show", action="store_true")
a = ap.parse_args()
b = os.path.abspath(a.build)

exe = os.path.join(b, "walk_push")
cc = os.environ.get("CC", "cc")
subprocess.run([cc, "-O1", "-g", "-rdynamic", "-o", exe,
                os.path.join(here, "push.c"), os.path.join(here, "trace.c"),
                "-I" + os.path.join(b, "include"),
                "-L" + b, "-lquicksilver", "-Wl,-rpath," + b, "-ldl",
                "-lpthread"], check=True)
trace = os.path.join(b, "walk.trace")
run = subprocess.run([exe, trace] + ([a.impl] if a.impl else []),
                     capture_output=True, text=True, check=True)
impl = run.stdout.strip()

events = []  # ("enter", object, offset) or ("exit",)
for line in open(trace):
    if line.startswith(">"):
        obj, off = line[2:].strip().rsplit("+", 1)
        events.append(("enter", obj, off))
    else:
        events.append(("exit",))

# each function's file, by addr2line over each object's offsets
where = {}
by_obj = {}
for ev in events:
    if ev[0] == "enter":
        by_obj.setdefault(ev[1], set()).add(ev[2])
for obj, offs in by_obj.items():
    offs = sorted(offs)
    out = subprocess.run(["addr2line", "-f", "-e", obj] + offs,
                         capture_output=True, text=True).stdout.split("\n")
    for i, off in enumerate(offs):
        fn, loc = out[2 * i], out[2 * i + 1]
        path = loc.rsplit(":", 1)[0]
        if path.startswith("??") or not path:
            path = os.path.basename(obj)
        else:
            path = os.path.relpath(os.path.normpath(os.path.join(b, path)),
                                   root)
        where[(obj, off)] = (fn, path)


def walk_of(events, leaves):
    """The files in order; leaves False: a call that calls nothing (a
    helper read by its name: qs_image_wrap, qs_timer_ns) is not followed."""
    walk, names, stack = [], [], []
    for i, ev in enumerate(events):
        if ev[0] == "enter":
            fn, f = where[(ev[1], ev[2])]
            leaf = i + 1 < len(events) and events[i + 1][0] == "exit"
            stack.append(stack[-1] if (leaf and not leaves and stack)
                         else f)
            names.append((len(stack), fn, f))
            f = stack[-1]
        else:
            stack.pop()
            f = stack[-1] if stack else None
        if f and (not walk or walk[-1] != f):
            walk.append(f)
    left, returns = set(), 0
    for i, f in enumerate(walk):
        if f in left:  # a stay in a file the walk had left before
            returns += 1
        if i:
            left.add(walk[i - 1])
    return walk, returns, names


walk, returns, names = walk_of(events, True)
core, core_returns, _ = walk_of(events, False)

if a.show:
    for depth, fn, f in names:
        print(f"# {'  ' * (depth - 1)}{fn} ({f})")
    print("# walk: " + " -> ".join(walk))
# where the stays without leaf calls are, by part of the tree (engine/,
# methods/<name>/, cl/, db/), as a diagnostic line
parts = {}
for f in core:
    seg = f.split("/")
    part = "/".join(seg[:2]) if seg[0] == "methods" and len(seg) > 2 \
        else seg[0]
    parts[part] = parts.get(part, 0) + 1
print("# stays without leaf calls by part: " + ", ".join(
    f"{k} {v}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])))
ok = ((a.max_stays is None or len(walk) <= a.max_stays) and
      (a.max_returns is None or returns <= a.max_returns))
print("1..1")
print(f"{'ok' if ok else 'not ok'} 1 - one qs_esrrf_stream_push ({impl}): "
      f"{len(walk)} stays in {len(set(walk))} files, {returns} returns to "
      f"a file left before; without leaf calls {len(core)} stays in "
      f"{len(set(core))} files, {core_returns} returns" +
      (f" (limits {a.max_stays} and {a.max_returns}, all calls)"
       if a.max_stays is not None else ""))
sys.exit(0 if ok else 1)
