#!/usr/bin/env python3
"""The shared library exports exactly the functions the public headers
declare with QS_API: nothing internal leaks (pool_*, store_*, clrt_*...),
and nothing declared is missing. Also checks the split of the headers: the
host header (the first) uses no type, enumerator or function of the
method-authoring header (the second), which it can only name as the
incomplete `struct qs_impl_def`, and that every exported name carries the
one project prefix qs_. Further headers add their functions to the
declared set. Usage: exports.py HOST_HEADER
METHOD_HEADER [HEADER...] LIBRARY NM. Prints TAP."""
import re
import subprocess
import sys

*headers, library, nm = sys.argv[1:]


def code(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)          # comments
    return re.sub(r"^\s*#.*?(?<!\\)$", "", text, flags=re.M | re.S)  # macros


def api(text):
    return set(re.findall(r"\bQS_API\b[^;{]*?\b([A-Za-z_]\w*)\s*\(", text,
                          re.S))


texts = [code(h) for h in headers]
declared = set().union(*(api(t) for t in texts))
out = subprocess.run([nm, "-D", "--defined-only", library], check=True,
                     capture_output=True, text=True).stdout
exported = {f[2] for f in (l.split() for l in out.splitlines())
            if len(f) == 3 and f[1] in "TtWwDdBbRr"}
extra = sorted(exported - declared)
missing = sorted(declared - exported)

# Names the method headers introduce: typedefs, struct tags, enumerators and
# functions; the host header must mention none of them.
authored = set()
for t in texts[1:2]:
    authored |= api(t)
    authored |= set(re.findall(r"\}\s*([A-Za-z_]\w*)\s*;", t))    # typedefs
    authored |= set(re.findall(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", t))  # fn ptrs
    authored |= set(re.findall(r"typedef\s+struct\s+\w+\s+(\w+)\s*;", t))
    for body in re.findall(r"enum\s+\w*\s*\{(.*?)\}", t, re.S):
        authored |= set(re.findall(r"\b([A-Z][A-Z0-9_]+)\b", body))
host = re.sub(r"\bstruct\s+qs_impl_def\b", "", texts[0])
leaked = sorted(n for n in authored
                if re.search(r"\b" + re.escape(n) + r"\b", host))
leaked = [n for n in leaked if n not in ("run", "probe", "parallel_for",
                                         "step", "advance", "kept", "keep",
                                         "open", "close")]  # member names

unprefixed = sorted(n for n in exported | declared if not n.startswith("qs_"))

print("1..5")
print(("ok" if declared else "not ok") +
      f" 1 - the headers declare {len(declared)} QS_API functions")
print(("ok" if not extra else "not ok") + " 2 - no export beyond the headers" +
      ("" if not extra else ": " + ", ".join(extra)))
print(("ok" if not missing else "not ok") +
      " 3 - every declared function is exported" +
      ("" if not missing else ": missing " + ", ".join(missing)))
print(("ok" if len(headers) > 1 and authored and not leaked else "not ok") +
      f" 4 - the host header uses none of the {len(authored)} names of the "
      "method header" + ("" if not leaked else ": " + ", ".join(leaked)))
print(("ok" if not unprefixed else "not ok") +
      " 5 - every public function is named qs_*" +
      ("" if not unprefixed else ": " + ", ".join(unprefixed)))
