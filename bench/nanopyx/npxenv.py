"""npxenv.py - the private Python environment that holds the reference NanoPyx.

The comparison scripts run under a virtual environment of their own, never
the system interpreter, so that the NanoPyx numbers are always those of one
pinned release. The environment lives in $QS_NANOPYX_VENV, else
$XDG_CACHE_HOME/quicksilver/nanopyx-venv (~/.cache/... without
XDG_CACHE_HOME), and is created on first use with pip. An existing
interpreter that already has the pinned release can be named with
$QS_NANOPYX_PYTHON instead (nothing is installed then).

NanoPyx's engine keeps benchmark files under ~/.liquid_engine and reads
them back to choose run types; HOME is pointed at a private directory next
to the environment so that runs start from the same state and the user's own
files are never touched.
"""

import os
import subprocess
import sys
import venv

NANOPYX_VERSION = "2.1.5"
# The engine NanoPyx 2.1.5 was measured with; pip resolves nanopyx's own
# requirement to it, pinning it keeps later releases from changing the agent.
LIQUID_ENGINE_VERSION = "0.2.0"
PINS = [f"nanopyx=={NANOPYX_VERSION}", f"liquid_engine=={LIQUID_ENGINE_VERSION}",
        "numpy", "tifffile"]

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "quicksilver")


def venv_dir():
    return os.environ.get("QS_NANOPYX_VENV") or os.path.join(
        cache_root(), "nanopyx-venv")


def venv_python():
    """The interpreter that runs NanoPyx: $QS_NANOPYX_PYTHON or the venv's."""
    given = os.environ.get("QS_NANOPYX_PYTHON")
    if given:
        return given
    return os.path.join(venv_dir(), "bin", "python")


def _has_pins(python):
    probe = ("import importlib.metadata as m, sys;"
             f"sys.exit(0 if m.version('nanopyx') == '{NANOPYX_VERSION}' "
             "else 1)")
    try:
        return subprocess.run([python, "-c", probe],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


def ensure():
    """Creates the venv and installs the pins unless they are there already.
    Returns the interpreter path. Raises SystemExit with a message on
    failure (pip's output goes to stderr)."""
    python = venv_python()
    if os.environ.get("QS_NANOPYX_PYTHON"):
        if not _has_pins(python):
            sys.exit(f"QS_NANOPYX_PYTHON={python} has no nanopyx=="
                     f"{NANOPYX_VERSION}")
        return python
    if _has_pins(python):
        return python
    d = venv_dir()
    print(f"creating {d} with {' '.join(PINS)}", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=False).create(d)
    rc = subprocess.run([python, "-m", "pip", "install", "--quiet",
                         "--disable-pip-version-check"] + PINS,
                        stdout=sys.stderr).returncode
    if rc != 0 or not _has_pins(python):
        sys.exit(f"pip could not install {' '.join(PINS)} into {d}")
    return python


def child_env():
    """Environment for processes that import NanoPyx: OpenCL on (PoCL via
    the system ICD, with a writable kernel cache), a private HOME for the
    engine's benchmark files, and quiet optional-dependency warnings."""
    env = dict(os.environ)
    env["NANOPYX_ENABLE_OPENCL"] = "1"
    env.pop("NANOPYX_DISABLE_OPENCL", None)
    uid = os.getuid()
    tmp = env.get("TMPDIR", "/tmp")
    env.setdefault("POCL_CACHE_DIR", os.path.join(tmp, f"pocl-kcache-{uid}"))
    os.makedirs(env["POCL_CACHE_DIR"], exist_ok=True)
    home = os.path.join(os.path.dirname(venv_dir()), "nanopyx-home")
    os.makedirs(home, exist_ok=True)
    env["HOME"] = home
    env["PYTHONWARNINGS"] = "ignore"
    return env


def reexec_in_venv():
    """Runs the calling script again under the NanoPyx interpreter unless it
    already is that interpreter (recognised by the marker variable)."""
    if os.environ.get("QS_NANOPYX_CHILD") == "1":
        return
    python = ensure()
    env = child_env()
    env["QS_NANOPYX_CHILD"] = "1"
    os.execve(python, [python] + sys.argv, env)


def nanopyx_versions():
    """Versions of the packages that make the reference numbers."""
    import importlib.metadata as m
    out = {}
    for pkg in ("nanopyx", "liquid_engine", "numpy", "pyopencl", "tifffile"):
        try:
            out[pkg] = m.version(pkg)
        except m.PackageNotFoundError:
            out[pkg] = None
    out["python"] = sys.version.split()[0]
    return out
