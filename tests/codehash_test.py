#!/usr/bin/env python3
"""engine/codehash.py on a scratch tree: a method's hash changes when its
own code, shared code or the library version changes, and not when another
method's code does. Usage: codehash_test.py CODEHASH.py. Prints TAP."""
import os
import re
import subprocess
import sys
import tempfile

script = sys.argv[1]


def hashes(root, version='1.0'):
    out = os.path.join(root, 'out.c')
    subprocess.run([sys.executable, script, root, version, out,
                    os.path.join(root, 'out.d'), 'alpha', 'beta'], check=True)
    text = open(out).read()
    return dict(re.findall(r'\{"(\w+)", (\d+)u\}', text))


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


with tempfile.TemporaryDirectory() as root:
    write(root, 'methods/alpha/alpha.c',
          '#include "methods/shared/common.h"\nint alpha;\n')
    write(root, 'methods/beta/beta.c', '#include "../shared/common.h"\n'
          '#include "methods/alpha/alpha.h"\n#include <stdio.h>\nint beta;\n')
    write(root, 'methods/alpha/alpha.h', '#define A 1\n')
    write(root, 'methods/beta/beta.cl', 'kernel void k(void) {}\n')
    write(root, 'methods/shared/common.h', '#define X 1\n')
    write(root, 'methods/shared/unused.h', '#define U 1\n')
    write(root, 'engine/pool.c', 'int pool;\n')
    base = hashes(root)
    checks = [(len(base) == 2 and base['alpha'] != base['beta'],
               'two methods, two hashes')]
    write(root, 'methods/alpha/alpha.c',
          '#include "methods/shared/common.h"\nint alpha = 2;\n')
    h = hashes(root)
    checks.append((h['alpha'] != base['alpha'], 'own code changes alpha'))
    checks.append((h['beta'] == base['beta'], "alpha's .c leaves beta"))
    write(root, 'methods/beta/beta.cl', 'kernel void k(void) { }\n')
    h2 = hashes(root)
    checks.append((h2['beta'] != h['beta'], 'a kernel changes beta'))
    write(root, 'methods/shared/common.h', '#define X 2\n')
    h3 = hashes(root)
    checks.append((h3['alpha'] != h2['alpha'] and h3['beta'] != h2['beta'],
                   'an included shared header changes both'))
    write(root, 'methods/alpha/alpha.h', '#define A 2\n')
    h5 = hashes(root)
    checks.append((h5['beta'] != h3['beta'],
                   "alpha's header that beta includes changes beta"))
    write(root, 'methods/shared/unused.h', '#define U 2\n')
    checks.append((hashes(root) == h5, 'a header nobody includes counts for '
                   'no method'))
    h4 = hashes(root, '1.1')
    checks.append((h4['alpha'] != h5['alpha'], 'the library version counts'))
    checks.append((hashes(root) == h5, 'the same tree, the same hashes'))
print(f'1..{len(checks)}')
for i, (ok, what) in enumerate(checks, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {what}")
