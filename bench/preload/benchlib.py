"""Shared pieces of the preload benchmark drivers (run_malloc_bench.py, step_time.py).

Finds the build directory and libsentinel.so, builds the environment of each mode (plain, sentinel,
passthrough) from a clean copy of the caller's environment, rotates the order of modes between rounds,
and describes the machine. Standard library only: the drivers run with any python3.
"""

import datetime
import os
import platform
import statistics

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# plain: no preload; sentinel: the preload in its default (tracking) mode; passthrough: the preload
# with SENTINEL_MODE=passthrough, i.e. the cost of interposition alone.
MODES = ("plain", "sentinel", "passthrough")


def build_dir(arg):
    """--build-dir, else $SENTINEL_BUILD_DIR, else <repo>/build."""
    d = arg or os.environ.get("SENTINEL_BUILD_DIR") or os.path.join(REPO_ROOT, "build")
    return os.path.abspath(d)


def library(build):
    return os.path.join(build, "lib", "libsentinel.so")


def mode_env(mode, lib, extra=None):
    """The environment for one run. Inherited LD_PRELOAD and SENTINEL_* settings are dropped so a
    stray variable in the caller's shell cannot change what is measured."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SENTINEL_")}
    if mode != "plain":
        env["LD_PRELOAD"] = lib
    if mode == "passthrough":
        env["SENTINEL_MODE"] = "passthrough"
    if extra:
        env.update(extra)
    return env


def rotated(modes, round_index):
    """The order of modes in one round: rotated every round so no mode always runs first (right after
    another process warmed the caches) or last."""
    k = round_index % len(modes)
    return list(modes[k:]) + list(modes[:k])


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def quantile(xs, q):
    """Linear-interpolated q-quantile (0 <= q <= 1) of a non-empty list."""
    ys = sorted(xs)
    pos = q * (len(ys) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ys) - 1)
    return ys[lo] + (ys[hi] - ys[lo]) * (pos - lo)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "unknown"


def machine_line():
    return "%s, %d CPUs, %s, kernel %s, python %s" % (
        datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        os.cpu_count() or 0,
        cpu_model(),
        platform.release(),
        platform.python_version(),
    )


def fmt_ns(x):
    return "%.1f" % x if x < 1000 else "%.0f" % x
