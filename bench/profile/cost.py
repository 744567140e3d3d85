#!/usr/bin/python3
"""Cost of profile mode: step time of scripts/train.py plain, under libsentinel.so in its default mode,
and with SENTINEL_MODE=profile (software sampler here: no PMU in this VM), over interleaved rounds.

Modes per round (order rotated every round): plain; sentinel (default mode: tracking only);
profile-marked (train.py --mark-steps: Sentinel's steps are train.py's steps, so the profiled steps are
known exactly: step 0 closes the first marked step, step 1 is the warm-up, in step 2 the software sampler
starts (a step ahead of the profile, docs/profiler.md), steps 3 and 4 are profiled, step 5 is followed with
sampling off); profile-detected (automatic step detection: the profiled steps
are wherever detection locks; the profile's step_time_ns is their mean time).

Prints per train.py step the median time of each mode and, as summary ratios (median over rounds of
the per-round ratio to plain of the same round):
  profiled  : mean of the profiled steps / median plain step (marked: steps 3-4; detected: the profile's
              step_time_ns, which since the profiles carry the unsampled step's phase times is NOT the
              profiled steps' time: for detected steps read the per-step table instead)
  after     : median of the steps after profiling / median plain step (marked: steps 5..; detected:
              the last third of the run)
and the same against the sentinel (default mode) run, which separates the profiling cost from what the
preload itself changes (its extent cache makes large allocations cheaper than glibc's mmap/munmap).
Not a test: no limits.

  cost.py [--build-dir DIR] [--rounds N] [--steps N] [--json FILE] [-- TRAIN.PY ARGUMENTS]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODES = ("plain", "sentinel", "profile-marked", "profile-detected")


def env_for(mode, lib, scratch):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SENTINEL_")}
    if mode != "plain":
        env["LD_PRELOAD"] = lib
        env["SENTINEL_LOG"] = "warn"
    if mode.startswith("profile"):
        env.update({"SENTINEL_MODE": "profile", "SENTINEL_PROFILE_OUT": os.path.join(scratch, "p.json"),
                    "SENTINEL_STATS": os.path.join(scratch, "s.json"), "SENTINEL_WARMUP_STEPS": "1",
                    "SENTINEL_PROFILE_STEPS": "2"})
    return env


def run(mode, lib, train_args, scratch):
    out = os.path.join(scratch, "run.json")
    cmd = ["/usr/bin/python3", os.path.join(REPO, "scripts", "train.py")] + train_args + ["--out", out, "--quiet"]
    if mode == "profile-marked":
        cmd.append("--mark-steps")
    p = subprocess.run(cmd, env=env_for(mode, lib, scratch), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s failed (%s):\n%s" % (" ".join(cmd), mode, p.stderr[-3000:]))
    with open(out) as f:
        data = json.load(f)
    result = {"steps": data["step_seconds"], "losses": data["losses"]}
    if mode.startswith("profile"):
        with open(os.path.join(scratch, "p.json")) as f:
            prof = json.load(f)
        with open(os.path.join(scratch, "s.json")) as f:
            stats = json.load(f)
        result["profile_step_s"] = prof["step_time_ns"] / 1e9
        result["period"] = prof["period"]
        result["state"] = stats.get("profile_state")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.environ.get("SENTINEL_BUILD_DIR", os.path.join(REPO, "build")))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--json")
    ap.add_argument("train_args", nargs="*")
    args = ap.parse_args()
    lib = os.path.join(os.path.abspath(args.build_dir), "lib", "libsentinel.so")
    if not os.path.exists(lib):
        sys.exit("no %s (build first, or pass --build-dir)" % lib)
    train_args = (args.train_args or ["--model", "mlp"]) + ["--steps", str(args.steps)]
    runs = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            for mode in order:
                runs[mode].append(run(mode, lib, train_args, scratch))
            print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)

    losses = {m: {tuple(x["losses"]) for x in runs[m]} for m in MODES}
    same_losses = len(set().union(*losses.values())) == 1
    n = args.steps
    print("train.py %s, %d rounds, interleaved; step times in ms (median over rounds)" % (" ".join(train_args), args.rounds))
    print("%4s %9s %9s %15s %17s" % ("step", *MODES))
    for i in range(n):
        print("%4d %9.1f %9.1f %15.1f %17.1f" % (i, *(1e3 * statistics.median(x["steps"][i] for x in runs[m]) for m in MODES)))

    after_first = max(6, n // 2)
    summary = {}

    def ratios(mode, base_mode, profiled_of, after_of):
        prof, aft = [], []
        for x, b in zip(runs[mode], runs[base_mode]):
            base = statistics.median(b["steps"][1:])
            prof.append(profiled_of(x) / base)
            aft.append(after_of(x) / base)
        return statistics.median(prof), min(prof), max(prof), statistics.median(aft), min(aft), max(aft)

    marked_prof = lambda x: statistics.mean(x["steps"][3:5])
    marked_after = lambda x: statistics.median(x["steps"][after_first:])
    detected_prof = lambda x: x["profile_step_s"]
    detected_after = lambda x: statistics.median(x["steps"][n - n // 3:])
    print("\nratios (median over rounds, [min..max]):")
    for mode, pf, af, label in (("profile-marked", marked_prof, marked_after, "steps 3-4 / steps %d.." % after_first),
                                ("profile-detected", detected_prof, detected_after,
                                 "profile step_time_ns / last %d steps" % (n // 3))):
        for base in ("plain", "sentinel"):
            r = ratios(mode, base, pf, af)
            summary["%s_vs_%s" % (mode, base)] = r
            print("  %-16s vs %-8s profiled %.2f [%.2f..%.2f]   after %.2f [%.2f..%.2f]   (%s)" % (mode, base, *r, label))
    sentinel_vs_plain = statistics.median(statistics.median(s["steps"][1:]) / statistics.median(p["steps"][1:])
                                          for s, p in zip(runs["sentinel"], runs["plain"]))
    print("  sentinel (default mode) vs plain: %.2f" % sentinel_vs_plain)
    print("  profile state at exit: %s; period %s; losses identical in every run: %s" % (
        sorted({x["state"] for m in MODES[2:] for x in runs[m]}), sorted({x["period"] for m in MODES[2:] for x in runs[m]}),
        same_losses))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"train_args": train_args, "runs": runs, "summary": summary}, f)
    return 0 if same_losses else 1


if __name__ == "__main__":
    sys.exit(main())
