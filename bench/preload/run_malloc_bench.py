#!/usr/bin/env python3
"""malloc-family cost with and without libsentinel.so, as ratios measured side by side in one run.

Runs <build>/bench/preload/sentinel_bench_malloc once per case and mode (plain, under the preload,
and with SENTINEL_MODE=passthrough), interleaved: every round runs every case in every mode, with the
order of modes rotated between rounds, so slow drifts of a shared machine hit all modes alike. Each
case runs in a fresh process, so glibc's adaptive thresholds (mmap and trim) set by one case do not
carry over into the next.

Prints per case: median ns/op of each mode over the rounds, and the median over rounds of the
per-round ratio (sentinel / plain, passthrough / plain) with its min..max. Not a test: no limits.

  run_malloc_bench.py [--build-dir DIR] [--rounds N] [--reps N] [--scale F] [--case NAME]...
                      [--no-passthrough] [--baseline-lib SO] [--json FILE]

With --baseline-lib (another build of libsentinel.so, e.g. of the previous commit) a fourth mode runs
under that library and a last column gives sentinel / baseline: whether a change made the allocation
path slower, measured side by side.
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import benchlib  # noqa: E402

EXPECTED_STATE = {"plain": "absent", "sentinel": "active", "passthrough": "passthrough", "baseline": "active"}


def list_cases(binary):
    out = subprocess.run([binary, "--list"], check=True, capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def run_case(binary, lib, mode, case, reps, scale):
    """One process, one case: returns (ns/op, minor page faults/op)."""
    cmd = [binary, "--case", case, "--reps", str(reps), "--scale", str(scale)]
    p = subprocess.run(cmd, env=benchlib.mode_env(mode, lib), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s (%s) failed with %d:\n%s" % (" ".join(cmd), mode, p.returncode, p.stderr))
    lines = p.stdout.split("\n")
    state = lines[0].split()[1] if lines and lines[0].startswith("sentinel ") else "?"
    if state != EXPECTED_STATE[mode]:
        # A preload that silently did not load would make every ratio 1.0: refuse to print that.
        sys.exit("mode %s: the benchmark reports Sentinel '%s', expected '%s'" %
                 (mode, state, EXPECTED_STATE[mode]))
    for line in lines:
        f = line.split()
        if len(f) == 5 and f[0] == "case" and f[1] == case:
            return float(f[2]), float(f[4])
    sys.exit("no result for case %s in:\n%s" % (case, p.stdout))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", help="build directory (default: $SENTINEL_BUILD_DIR or <repo>/build)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions inside each process (default 3)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the ops per repetition")
    ap.add_argument("--case", action="append", help="run only this case (repeatable; see --list)")
    ap.add_argument("--no-passthrough", action="store_true", help="leave out the pass-through column")
    ap.add_argument("--baseline-lib", help="also run under this libsentinel.so and print sentinel / baseline")
    ap.add_argument("--json", help="also write every measurement here")
    args = ap.parse_args()
    if args.rounds < 1 or args.reps < 1:
        ap.error("--rounds and --reps must be at least 1")

    build = benchlib.build_dir(args.build_dir)
    binary = os.path.join(build, "bench", "preload", "sentinel_bench_malloc")
    lib = benchlib.library(build)
    for path in (binary, lib):
        if not os.path.exists(path):
            sys.exit("%s not found: build it (cmake --build %s --target sentinel_bench_malloc) "
                     "or pass --build-dir" % (path, build))
    all_cases = list_cases(binary)
    cases = args.case or all_cases
    for c in cases:
        if c not in all_cases:
            sys.exit("unknown case %s (known: %s)" % (c, ", ".join(all_cases)))
    modes = ("plain", "sentinel") if args.no_passthrough else benchlib.MODES
    if args.baseline_lib:
        if not os.path.exists(args.baseline_lib):
            sys.exit("%s not found" % args.baseline_lib)
        modes = tuple(modes) + ("baseline",)
    lib_of = {m: (args.baseline_lib if m == "baseline" else lib) for m in modes}

    print("# machine: %s" % benchlib.machine_line())
    print("# library: %s" % lib)
    if args.baseline_lib:
        print("# baseline library: %s" % args.baseline_lib)
    print("# rounds %d, reps %d, scale %g, load average at start %s" %
          (args.rounds, args.reps, args.scale, benchlib.load_average()), flush=True)

    ns = {c: {m: [] for m in modes} for c in cases}  # ns[case][mode] = one value per round
    faults = {c: {m: [] for m in modes} for c in cases}
    for r in range(args.rounds):
        for c in cases:
            for m in benchlib.rotated(modes, r):
                t, f = run_case(binary, lib_of[m], m, c, args.reps, args.scale)
                ns[c][m].append(t)
                faults[c][m].append(f)
        print("# round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)

    head = "%-13s %12s %12s %7s %15s" % ("case", "plain ns/op", "sentinel", "ratio", "ratio min..max")
    if "passthrough" in modes:
        head += " %12s %7s" % ("passthrough", "ratio")
    if "baseline" in modes:
        head += " %12s %9s" % ("baseline", "sent/base")
    print(head)
    summary = {}
    for c in cases:
        row = {m: benchlib.median(ns[c][m]) for m in modes}
        rs = [s / p for s, p in zip(ns[c]["sentinel"], ns[c]["plain"])]
        line = "%-13s %12s %12s %7.2f %7.2f..%-7.2f" % (
            c, benchlib.fmt_ns(row["plain"]), benchlib.fmt_ns(row["sentinel"]), benchlib.median(rs),
            min(rs), max(rs))
        summary[c] = {"ns_per_op": row, "ratio_sentinel": benchlib.median(rs)}
        if "passthrough" in modes:
            rp = [t / p for t, p in zip(ns[c]["passthrough"], ns[c]["plain"])]
            line += " %12s %7.2f" % (benchlib.fmt_ns(row["passthrough"]), benchlib.median(rp))
            summary[c]["ratio_passthrough"] = benchlib.median(rp)
        if "baseline" in modes:
            rb = [s / b for s, b in zip(ns[c]["sentinel"], ns[c]["baseline"])]
            line += " %12s %9.3f" % (benchlib.fmt_ns(row["baseline"]), benchlib.median(rb))
            summary[c]["ratio_sentinel_to_baseline"] = benchlib.median(rb)
        print(line)
    print("# ratio = median over rounds of (mode ns/op / plain ns/op) in the same round; < 1 is faster")
    print("# minor page faults per op (median over rounds): " + "; ".join(
        "%s %s" % (c, "/".join("%.1f" % benchlib.median(faults[c][m]) for m in modes)) for c in cases) +
        " (" + "/".join(modes) + ")")
    print("# load average at end %s" % benchlib.load_average())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": benchlib.machine_line(), "rounds": args.rounds, "reps": args.reps,
                       "scale": args.scale, "per_round_ns": ns, "per_round_faults_per_op": faults,
                       "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
