"""Runs the Python test suite with pytest and reports it as TAP on stdout.

    python tests/python/tap.py TESTDIR [pytest args...]

meson runs this as one TAP test ("python" suite), so tools/test counts every
pytest test in its closing line: passed as "ok", failed or errored as
"not ok", skipped as "ok ... # SKIP reason". pytest's own output goes to
stderr (meson's log keeps it). The exit status is 0 when nothing failed;
when pytest collected nothing (its exit status 5) the plan is "1..0 # SKIP"
and the status is 0, so an empty selection does not break the build.
"""

import sys

import pytest


class TapReporter:
    def __init__(self, out):
        self.out = out
        self.n = 0
        self.failed = 0

    def _line(self, ok, name, directive=""):
        self.n += 1
        line = f"{'ok' if ok else 'not ok'} {self.n} - {name}"
        if directive:
            line += f" # {directive}"
        print(line, file=self.out, flush=True)

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.replace("#", "%23")
        if report.when == "call" or (report.when == "setup" and
                                     not report.passed):
            if report.skipped:
                reason = report.longrepr[2] if isinstance(
                    report.longrepr, tuple) else "skipped"
                self._line(True, name, "SKIP " + str(reason).replace(
                    "\n", " "))
            elif report.passed:
                self._line(True, name)
            else:
                self.failed += 1
                self._line(False, name)
        elif report.when == "teardown" and report.failed:
            self.failed += 1
            self._line(False, name + " (teardown)")

    def pytest_collectreport(self, report):
        if report.failed:
            self.failed += 1
            self._line(False, "collect " + report.nodeid)


def main(argv):
    out = sys.stdout
    # Everything pytest prints goes to stderr; stdout carries TAP only.
    sys.stdout = sys.stderr
    tap = TapReporter(out)
    rc = pytest.main(["-p", "no:cacheprovider", "-rfEs", *argv],
                     plugins=[tap])
    if tap.n == 0:
        print("1..0 # SKIP no tests collected", file=out, flush=True)
        return 0 if rc in (0, 5) else 1
    print(f"1..{tap.n}", file=out, flush=True)
    return 0 if rc in (0, 5) and tap.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
