#!/usr/bin/env python3
"""The shared library exports exactly the functions the public header
declares with QS_API: nothing internal leaks (pool_*, store_*, clrt_*...),
and nothing declared is missing. Usage: exports.py HEADER LIBRARY NM.
Prints TAP."""
import re
import subprocess
import sys

header, library, nm = sys.argv[1:4]
text = open(header).read()
text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)          # comments
text = re.sub(r"^\s*#.*?(?<!\\)$", "", text, flags=re.M | re.S)  # macros
declared = set(re.findall(r"\bQS_API\b[^;{]*?\b([A-Za-z_]\w*)\s*\(", text,
                          re.S))
out = subprocess.run([nm, "-D", "--defined-only", library], check=True,
                     capture_output=True, text=True).stdout
exported = {f[2] for f in (l.split() for l in out.splitlines())
            if len(f) == 3 and f[1] in "TtWwDdBbRr"}
extra = sorted(exported - declared)
missing = sorted(declared - exported)
print("1..3")
print(("ok" if declared else "not ok") +
      f" 1 - the header declares {len(declared)} QS_API functions")
print(("ok" if not extra else "not ok") + " 2 - no export beyond the header" +
      ("" if not extra else ": " + ", ".join(extra)))
print(("ok" if not missing else "not ok") +
      " 3 - every declared function is exported" +
      ("" if not missing else ": missing " + ", ".join(missing)))
