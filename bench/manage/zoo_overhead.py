#!/usr/bin/python3
"""Sentinel's overhead on real-sized torchvision models (tests/torch/programs/zoo.py), per steady step: each
model trained plain, under the preload in track mode, and in managed mode as a dry run (SENTINEL_DRY_RUN=1,
the slow node simulated), in rounds that rotate the order of the modes, in one run. Prints per model

  track / plain      median step time of the steady steps (the steps under the plan the managed run kept,
                     skipping its first: the same iterations in every mode)
  managed / plain    the same, dry-run managed mode; and, where the run replanned for late prefetches, over
                     the steps between its first plan and its last (each replan is a planner run)
  profiled / plain   the managed run's profiled steps (profile_first_step and the next), mean
  peak RSS           of each mode's process (wait4), managed and track against plain

  zoo_overhead.py LIBSENTINEL [--arch resnet50 vit_b_16 densenet121] [--batch 16] [--size 128] [--steps 14]
                  [--rounds 2] [--python /usr/bin/python3] [--json FILE] [--delay-page-reporting MS]

and, per mode, the steady steps' minor faults (zoo.py --step-times), and the fast bytes the managed run
faulted in per step (the fast pool's turnover under its budget, docs/placement.md).

A virtual machine whose balloon reports free pages to its host (Linux's page_reporting; this project's VMs
do) gives freed 2 MiB blocks back to the host, and a page faulted in there later costs a host fault too:
1.2-2.4 ns per byte against 0.11 once backed (docs/results.md, "The tails of parked extents"). The fast
pool's turnover under a budget pays that; a process without Sentinel, whose malloc keeps its freed memory,
mostly does not. The script says whether it is on; --delay-page-reporting MS (root) sets the kernel's
page_reporting min_free_ms for the run and puts it back after, to see what the dry run costs where freed
memory stays backed, as on a server without a balloon.

Wall-clock ratios on a shared machine: the rounds and the median are there to dampen its noise; the figures
are not tests. The dry run books moves instead of making them (docs/managed-mode.md): the managed figure is
Sentinel's own cost (profiling, planning, the executor, the engine's queue), not the cost of slow memory.
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "..", "..", "tests", "torch", "programs", "zoo.py")
MODES = ("plain", "track", "managed")
PAGE_REPORTING = "/sys/module/page_reporting/parameters"


def page_reporting():
    """The kernel's free page reporting parameters, {} where it has none."""
    try:
        names = os.listdir(PAGE_REPORTING)
    except OSError:
        return {}
    out = {}
    for name in names:
        try:
            with open(os.path.join(PAGE_REPORTING, name)) as f:
                out[name] = f.read().strip()
        except OSError:
            pass
    return out


@contextlib.contextmanager
def delayed_page_reporting(ms):
    """Sets page_reporting's min_free_ms to `ms` while the block runs (None: leaves it)."""
    path = os.path.join(PAGE_REPORTING, "min_free_ms")
    if ms is None:
        yield
        return
    with open(path) as f:
        before = f.read().strip()
    with open(path, "w") as f:
        f.write(str(ms))
    try:
        yield
    finally:
        with open(path, "w") as f:
            f.write(before)


def run(opts, arch, mode, tmp):
    out = os.path.join(tmp, f"{arch}-{mode}.json")
    stats = os.path.join(tmp, f"{arch}-{mode}-stats.json")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SENTINEL_")}
    if mode != "plain":
        env.update(LD_PRELOAD=opts.lib, SENTINEL_STATS=stats)
    if mode == "managed":
        env.update(SENTINEL_MODE="managed", SENTINEL_DRY_RUN="1", SENTINEL_FAST_BUDGET=opts.budget,
                   SENTINEL_TIER=opts.tier)
    cmd = [opts.python, PROGRAM, "--quiet", "--out", out, "--step-times", "--arch", arch, "--steps", str(opts.steps),
           "--batch", str(opts.batch), "--size", str(opts.size)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit(f"{arch} {mode} failed ({status}): {err[-500:]}")
    with open(out) as f:
        result = json.load(f)
    result["maxrss_kb"] = usage.ru_maxrss
    if mode != "plain":
        with open(stats) as f:
            result["stats"] = json.load(f)
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("lib")
    p.add_argument("--arch", nargs="+", default=["resnet50", "vit_b_16", "densenet121"])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--steps", type=int, default=14)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--budget", default="20%")
    p.add_argument("--tier", default="optane")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--json", help="write every run's step times and stats here")
    p.add_argument("--delay-page-reporting", type=int, metavar="MS",
                   help="root: page_reporting's min_free_ms for the run (restored after)")
    opts = p.parse_args()
    reporting = page_reporting()
    if opts.delay_page_reporting is not None and "min_free_ms" not in reporting:
        sys.exit("--delay-page-reporting: this kernel has no page_reporting min_free_ms parameter")
    report = {"page_reporting": reporting, "delay_page_reporting_ms": opts.delay_page_reporting}
    if reporting:
        print(f"free page reporting: {reporting}" +
              (f"; min_free_ms set to {opts.delay_page_reporting} for this run" if opts.delay_page_reporting else ""),
              flush=True)
    with tempfile.TemporaryDirectory() as tmp, delayed_page_reporting(opts.delay_page_reporting):
        for arch in opts.arch:
            runs = {m: [] for m in MODES}
            for r in range(opts.rounds):
                order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
                for mode in order:
                    runs[mode].append(run(opts, arch, mode, tmp))
            if any(a["losses"] != runs["plain"][0]["losses"] for m in MODES for a in runs[m]):
                sys.exit(f"{arch}: losses differ between runs")
            firsts = [a["stats"]["first_managed_step"] for a in runs["managed"]]
            lasts = [a["stats"].get("last_plan_first_step", a["stats"]["first_managed_step"]) for a in runs["managed"]]
            if min(firsts) < 0 or max(lasts) + 2 >= opts.steps:
                sys.exit(f"{arch}: too few steps under the last plan (first managed step {firsts}, the plan in force "
                         f"at exit from step {lasts}); raise --steps")
            steady = range(max(lasts) + 1, opts.steps)
            replanning = range(max(firsts) + 1, max(lasts) + 1)

            def median_steady(mode, steps=steady):
                return statistics.median(a["step_seconds"][i] for a in runs[mode] for i in steps)

            plain = median_steady("plain")
            profiled = [a["step_seconds"][i] for a in runs["managed"]
                        for i in (a["stats"]["profile_first_step"], a["stats"]["profile_first_step"] + 1)]
            rss = {m: max(a["maxrss_kb"] for a in runs[m]) for m in MODES}
            faults = {m: statistics.median(a["step_minor_faults"][i] for a in runs[m] for i in steady) for m in MODES}
            last = runs["managed"][-1]["stats"]
            fresh_fast = last.get("empty_birth_bytes_fast", 0) / opts.steps
            row = {
                "batch": opts.batch, "size": opts.size, "steps": opts.steps, "rounds": opts.rounds,
                "plain_step_s": plain,
                "track_ratio": median_steady("track") / plain,
                "managed_ratio": median_steady("managed") / plain,
                "replanning_ratio": (median_steady("managed", replanning) / median_steady("plain", replanning)
                                     if len(replanning) > 0 else None),
                "profiled_ratio": statistics.mean(profiled) / plain,
                "rss_plain_mb": rss["plain"] / 1024, "rss_track_ratio": rss["track"] / rss["plain"],
                "rss_managed_ratio": rss["managed"] / rss["plain"],
                "steady_steps": list(steady), "replanning_steps": list(replanning),
                "minor_faults_per_step": faults,
                "step_seconds": {m: [a["step_seconds"] for a in runs[m]] for m in MODES},
                "step_minor_faults": {m: [a["step_minor_faults"] for a in runs[m]] for m in MODES},
                "maxrss_mb": {m: [a["maxrss_kb"] / 1024 for a in runs[m]] for m in MODES},
                "stats": {m: [a["stats"] for a in runs[m]] for m in MODES if m != "plain"},
                "managed_fast_bytes_faulted_in_per_step": fresh_fast,
                "managed": {k: runs["managed"][-1]["stats"].get(k) for k in
                            ("managed_steps", "fallback_steps", "reprofiles", "replans", "late_prefetches",
                             "plan_fidelity", "first_managed_step", "last_plan_first_step", "profile_first_step")},
            }
            report[arch] = row
            print(f"{arch} b{opts.batch} {opts.size}px: plain {plain * 1e3:.0f} ms/step; track {row['track_ratio']:.3f}x, "
                  f"managed (dry run) {row['managed_ratio']:.3f}x"
                  + (f" (while replanning, steps {replanning.start}-{replanning.stop - 1}: {row['replanning_ratio']:.3f}x)"
                     if row["replanning_ratio"] else "")
                  + f", profiled steps {row['profiled_ratio']:.2f}x; "
                  f"peak RSS plain {row['rss_plain_mb']:.0f} MB, track {row['rss_track_ratio']:.3f}x, "
                  f"managed {row['rss_managed_ratio']:.3f}x; minor faults per step "
                  f"{' / '.join(f'{faults[m]:.0f}' for m in MODES)} (plain / track / managed), managed fast pool "
                  f"faulted in {fresh_fast / 2**20:.0f} MiB per step (run average); managed {row['managed']}", flush=True)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
