#!/usr/bin/env python3
"""The include graph of the library's folders (engine/, methods/, cl/, db/)
keeps the layering DESIGN.md states: no include cycle between files, none
between folders, cl/ and db/ include nothing of methods/ and nothing of the
engine beyond its public headers, and methods/ reach the engine only
through its contract (the public headers, the clock, a plan's internal
side for the live stream); engine/quicksilver.h names no method and
stays within 650 lines. Usage: layers.py SOURCE_ROOT. Prints TAP."""
import os
import re
import sys

root = os.path.abspath(sys.argv[1])
FOLDERS = ("engine", "methods", "cl", "db")
SEARCH = ("", "engine", os.path.join("methods", "esrrf"))  # -I of the build
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PUBLIC = {"engine/quicksilver.h", "engine/quicksilver_image.h",
          "engine/quicksilver_method.h",
          "methods/esrrf/quicksilver_esrrf.h"}
METHOD_MAY = PUBLIC | {"engine/timer.h", "engine/fail.h", "engine/plan.h"}


def rel(path):
    return os.path.relpath(path, root).replace(os.sep, "/")


def resolve(including, name):
    for base in [os.path.dirname(including)] + [os.path.join(root, s)
                                                 for s in SEARCH]:
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p
    return None  # generated (qs_config.h, builtin_methods.h) or system


files = []
for f in FOLDERS:
    for d, _, names in os.walk(os.path.join(root, f)):
        files += [os.path.join(d, n) for n in names
                  if n.endswith((".c", ".h"))]
edges = {}
for f in files:
    text = open(f, encoding="utf-8", errors="replace").read()
    edges[rel(f)] = sorted({rel(t) for t in (resolve(f, n)
                                             for n in INCLUDE.findall(text))
                            if t and rel(t).split("/")[0] in FOLDERS})


def cycles(graph):
    """Strongly connected components of more than one node, or a node
    that includes itself (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# timer.h: the public clock; fail.h: the one error setter
CONTRACT = PUBLIC | {"engine/timer.h", "engine/fail.h"}


def layer(f):
    """The folder, with the engine's public contract a layer of its own
    (every folder may include it; it includes none of them)."""
    return "contract" if f in CONTRACT else f.split("/")[0]


folder = {}
for a, bs in edges.items():
    for b in bs:
        fa, fb = layer(a), layer(b)
        if fa != fb:
            folder.setdefault(fa, set()).add(fb)
low_leaks = [f"{a} -> {b}" for a, bs in edges.items() for b in bs
             if a.split("/")[0] in ("cl", "db") and
             (b.startswith("methods/") or
              (b.startswith("engine/") and b not in CONTRACT))]
method_leaks = [f"{a} -> {b}" for a, bs in edges.items() for b in bs
                if a.startswith("methods/") and b.startswith("engine/") and
                b not in METHOD_MAY]
file_cycles = cycles(edges)
folder_cycles = cycles({k: sorted(v) for k, v in folder.items()})

# The engine's public header speaks of the engine only, and stays short
# enough to read: no declaration named for a method (its folder's name),
# at most 650 lines.
header = open(os.path.join(root, "engine", "quicksilver.h"),
              encoding="utf-8").read()
methods = sorted(d for d in os.listdir(os.path.join(root, "methods"))
                 if os.path.isdir(os.path.join(root, "methods", d)) and
                 d != "shared")
method_names = [m for m in re.findall(r"QS_API[^;(]*?\b(\w+)\s*\(", header)
                if any(m.startswith(x + "_") for x in methods)]
header_lines = header.count("\n")

checks = [
    (len(edges) > 50, f"{len(edges)} files read"),
    (not method_names and header_lines <= 650,
     f"engine/quicksilver.h: {header_lines} lines (at most 650), no "
     f"method's function" + "".join(f"; {m}" for m in method_names)),
    (not file_cycles, "no include cycle between files" +
     "".join(f"; {' <-> '.join(c)}" for c in file_cycles)),
    (not folder_cycles, "no include cycle between folders " +
     str({k: sorted(v) for k, v in sorted(folder.items())})),
    (not low_leaks, "cl/ and db/ include nothing of methods/ or the engine's "
     "internals" + "".join(f"; {x}" for x in low_leaks)),
    (not method_leaks, "methods/ reach the engine through its contract only"
     + "".join(f"; {x}" for x in method_leaks)),
]
print(f"1..{len(checks)}")
for i, (ok, what) in enumerate(checks, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {what}")
