"""``quicksilver`` (the command pip installs) and ``python -m quicksilver``:
the command-line tool, the same C program as the C build's, installed
inside this package by the wheel's build (-Dcli_in_python=true)."""

from __future__ import annotations

import os
import sys


def main() -> int:
    """Replaces this process with the CLI, passing the arguments on."""
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(here, "quicksilver-cli")
    if not os.access(exe, os.X_OK):
        sys.stderr.write(
            "quicksilver: this installation has no command-line tool "
            f"({exe} is missing); pip install . puts it there, a C build "
            "has it as build/tools/quicksilver\n")
        return 2
    os.execv(exe, ["quicksilver"] + sys.argv[1:])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
