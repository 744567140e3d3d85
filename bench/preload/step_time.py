#!/usr/bin/env python3
"""Training step time of scripts/train.py with and without libsentinel.so, as a ratio over rounds.

Every round runs train.py once per mode (plain, under the preload, and by default also with
SENTINEL_MODE=passthrough), in an order rotated between rounds. The first --skip steps of each run
are warm-up and are left out. Prints, per mode: median step time over all kept steps of all rounds,
the ratio to plain, the min..max of the per-round ratios (median step of that run / median plain step
of the same round) and a bootstrap 95% interval of the ratio (rounds resampled, then steps within
each resampled round; fixed seed), and the ratio of the 25th percentiles: interference from other
processes only ever adds time, so the lower quartile is the less disturbed estimate on a shared
machine. Also checks that every run produced the same losses: Sentinel must not change what the
program computes. Not a test: no limits.

  step_time.py [--build-dir DIR] [--rounds N] [--skip K] [--no-passthrough] [--json FILE]
               [-- TRAIN.PY ARGUMENTS]          (default: --model mlp --steps 20)
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import benchlib  # noqa: E402

DEFAULT_TRAIN_ARGS = ["--model", "mlp", "--steps", "20"]
BOOTSTRAP_ITERATIONS = 2000


def run_train(python, train_args, mode, lib, scratch):
    """One training run; returns (step_seconds, losses, minor page faults, CPU seconds (user + sys) of
    the whole run, start-up included)."""
    out = os.path.join(scratch, "run.json")
    cmd = [python, os.path.join(benchlib.REPO_ROOT, "scripts", "train.py")] + train_args + \
        ["--out", out, "--quiet"]
    # Children run one at a time, so the growth of RUSAGE_CHILDREN is this run's.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=benchlib.mode_env(mode, lib), capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    faults = after.ru_minflt - before.ru_minflt
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if p.returncode != 0:
        sys.exit("%s (%s) failed with %d:\n%s" % (" ".join(cmd), mode, p.returncode, p.stderr[-4000:]))
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    return data["step_seconds"], data["losses"], faults, cpu


def bootstrap_interval(kept, mode, rounds, rng):
    """95% interval of median(mode steps) / median(plain steps), resampling rounds and then steps."""
    ratios = []
    for _ in range(BOOTSTRAP_ITERATIONS):
        picked = [rng.randrange(rounds) for _ in range(rounds)]
        plain, other = [], []
        for r in picked:
            p, o = kept["plain"][r], kept[mode][r]
            plain.extend(rng.choice(p) for _ in p)
            other.extend(rng.choice(o) for _ in o)
        ratios.append(benchlib.median(other) / benchlib.median(plain))
    ratios.sort()
    return ratios[int(0.025 * len(ratios))], ratios[int(0.975 * len(ratios)) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", help="build directory (default: $SENTINEL_BUILD_DIR or <repo>/build)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--skip", type=int, default=2, help="warm-up steps left out of each run (default 2)")
    ap.add_argument("--no-passthrough", action="store_true", help="leave out the pass-through mode")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch")
    ap.add_argument("--json", help="also write every step time here")
    args, train_args = ap.parse_known_args()
    if train_args and train_args[0] == "--":
        train_args = train_args[1:]
    train_args = train_args or DEFAULT_TRAIN_ARGS
    if args.rounds < 1 or args.skip < 0:
        ap.error("--rounds must be at least 1 and --skip at least 0")

    lib = benchlib.library(benchlib.build_dir(args.build_dir))
    if not os.path.exists(lib):
        sys.exit("%s not found: build the 'sentinel' target or pass --build-dir" % lib)
    modes = ("plain", "sentinel") if args.no_passthrough else benchlib.MODES

    print("# machine: %s" % benchlib.machine_line())
    print("# library: %s" % lib)
    print("# train.py %s; rounds %d; first %d steps of each run skipped; load average at start %s" %
          (" ".join(train_args), args.rounds, args.skip, benchlib.load_average()), flush=True)

    kept = {m: [] for m in modes}    # kept[mode][round] = step times after warm-up
    first = {m: [] for m in modes}   # first step of each run (not in the ratio; shown for information)
    faults = {m: [] for m in modes}  # minor page faults per run
    cpu = {m: [] for m in modes}     # CPU seconds per run
    reference_losses = None
    losses_identical = True
    with tempfile.TemporaryDirectory(prefix="sentinel-step-time-") as scratch:
        for r in range(args.rounds):
            for m in benchlib.rotated(modes, r):
                steps, losses, f, c = run_train(args.python, train_args, m, lib, scratch)
                faults[m].append(f)
                cpu[m].append(c)
                if len(steps) <= args.skip:
                    sys.exit("train.py ran %d steps; need more than --skip %d" % (len(steps), args.skip))
                kept[m].append(steps[args.skip:])
                first[m].append(steps[0])
                if reference_losses is None:
                    reference_losses = losses
                elif losses != reference_losses:
                    losses_identical = False
            print("# round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)

    pooled = {m: [t for run in kept[m] for t in run] for m in modes}
    plain_median = benchlib.median(pooled["plain"])
    rng = random.Random(12345)
    plain_p25 = benchlib.quantile(pooled["plain"], 0.25)
    print("%-12s %14s %8s %15s %17s %10s %8s %12s" % ("mode", "median step ms", "ratio", "round min..max",
                                                      "bootstrap 95%", "p25 ms", "ratio", "1st step ms"))
    summary = {}
    for m in modes:
        med = benchlib.median(pooled[m])
        line = "%-12s %14.2f" % (m, med * 1e3)
        p25 = benchlib.quantile(pooled[m], 0.25)
        if m == "plain":
            line += " %8s %15s %17s %10.2f %8s" % ("1", "", "", p25 * 1e3, "1")
        else:
            per_round = [benchlib.median(o) / benchlib.median(p) for o, p in zip(kept[m], kept["plain"])]
            lo, hi = bootstrap_interval(kept, m, args.rounds, rng)
            line += " %8.4f %7.3f..%-7.3f %8.3f..%-8.3f %10.2f %8.4f" % (
                med / plain_median, min(per_round), max(per_round), lo, hi, p25 * 1e3, p25 / plain_p25)
            summary[m] = {"ratio": med / plain_median, "round_min": min(per_round),
                          "round_max": max(per_round), "bootstrap95": [lo, hi], "ratio_p25": p25 / plain_p25}
        line += " %12.1f" % (benchlib.median(first[m]) * 1e3)
        print(line)
    print("# ratio = median step (mode) / median step (plain), all kept steps of all rounds; < 1 is faster;")
    print("# p25 = 25th percentile of the same steps (less disturbed by other processes)")
    print("# per run, median: minor page faults " +
          ", ".join("%s %d" % (m, benchlib.median(faults[m])) for m in modes))
    # CPU time is less disturbed by other processes than wall time (it does not count time spent
    # waiting for a CPU); it includes start-up and every thread of the program, Sentinel's own too.
    cpu_plain = benchlib.median(cpu["plain"])
    print("# per run, median: CPU s (user+sys) " + ", ".join(
        "%s %.2f (x%.3f)" % (m, benchlib.median(cpu[m]), benchlib.median(cpu[m]) / cpu_plain) for m in modes))
    print("# losses identical in every run: %s" % ("yes" if losses_identical else "NO"))
    print("# load average at end %s" % benchlib.load_average())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": benchlib.machine_line(), "train_args": train_args, "skip": args.skip,
                       "step_seconds_kept": kept, "first_step_seconds": first, "minor_faults_per_run": faults,
                       "cpu_seconds_per_run": cpu,
                       "summary": summary,
                       "losses_identical": losses_identical}, f, indent=1)


if __name__ == "__main__":
    main()
