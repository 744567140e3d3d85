#!/usr/bin/python3
"""Trains torchvision models (tests/torch/programs/zoo.py), or another program's models (--program, e.g.
causal_lm.py with --model-option --family), plain, under the preload in track mode, and in managed mode as a
dry run (SENTINEL_DRY_RUN=1: the slow node simulated from the tier model), and checks for each model that
  - the losses are bit-identical in both modes (compared as float.hex strings),
  - track mode and managed mode found every training step,
  - managed mode holds its plan: a plan is in force, every step after planning is a managed step, none fell
    back, nothing was profiled again. A program whose steps hold passes of their own every few steps (a
    validation pass, a checkpoint) leaves the plan in those steps: --max-fallback-share F lets at most that
    share of the steps after planning fall back (every other one managed), and --plan-by-step N asks for the
    plan to be in force by step N.
Prints one row per model. Exit status 0 when every model passes, 1 otherwise.

Usage: zoo_managed.py LIBSENTINEL [--arch NAME ...] [--steps N] [--batch B] [--size PX] [--budget 20%]
                      [--tier optane] [--fake-data] [--python /usr/bin/python3] [--json FILE]
                      [--program PROGRAM.py --model-option=OPT] [--program-args="ARGS..."]
                      [--max-fallback-share F] [--plan-by-step N]
The stats file of each run is SENTINEL_STATS=...-%p.json, read for the training process's pid: a program
that starts other processes (torch.compile's compile workers) has them write their own, or none.
"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "programs", "zoo.py")


def exit_description(returncode):
    if returncode < 0:
        return f"killed by signal {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


def run(python, program, args, env_extra, out):
    """Returns (losses JSON or None, stderr, seconds, pid)."""
    env = dict(os.environ)
    env.update(env_extra)
    # A run that dies of a signal prints nothing of its own: Python's fault handler prints every thread's
    # Python stack on SIGSEGV, SIGBUS, SIGABRT, SIGFPE and SIGILL, so a crash says where it was.
    env.setdefault("PYTHONFAULTHANDLER", "1")
    cmd = [python, program, "--quiet", "--out", out] + args
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate()
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        return None, err.strip()[-2000:] + "\n" + exit_description(proc.returncode), wall, proc.pid
    with open(out) as f:
        return json.load(f), err, wall, proc.pid


def check_model(opts, arch, tmp):
    args = [opts.model_option, arch, "--steps", str(opts.steps)]
    if opts.program == PROGRAM:
        args += ["--batch", str(opts.batch), "--size", str(opts.size)]
    if opts.fake_data:
        args += ["--fake-data", "--workers", str(opts.workers)]
    args += opts.program_args
    row = {"model": arch, "failures": []}
    plain, plain_err, row["plain_s"], _ = run(opts.python, opts.program, args, {"LD_PRELOAD": ""},
                                        os.path.join(tmp, f"{arch}-plain.json"))
    if plain is None:
        row["failures"].append("plain run failed: " + plain_err)
        return row
    modes = {
        "track": {"SENTINEL_MODE": "track"},
        "managed": {"SENTINEL_MODE": "managed", "SENTINEL_DRY_RUN": "1", "SENTINEL_FAST_BUDGET": opts.budget,
                    "SENTINEL_TIER": opts.tier},
    }
    carved, resident, without_slow_cache = {}, {}, {}
    for mode, extra in modes.items():
        stats_pattern = os.path.join(tmp, f"{arch}-{mode}-stats-%p.json")
        env = {"LD_PRELOAD": opts.lib, "SENTINEL_STATS": stats_pattern, "SENTINEL_LOG": "warn", **extra}
        under, err, row[f"{mode}_s"], pid = run(opts.python, opts.program, args, env,
                                                os.path.join(tmp, f"{arch}-{mode}.json"))
        if under is None:
            row["failures"].append(f"{mode} run failed: " + err)
            continue
        with open(stats_pattern.replace("%p", str(pid))) as f:
            stats = json.load(f)
        carved[mode] = stats.get("extent_bytes_carved", 0)
        resident[mode] = stats.get("heap_peak_resident_bytes", 0)
        without_slow_cache[mode] = stats.get("heap_peak_resident_without_slow_cache_bytes", resident[mode])
        if under["losses"] != plain["losses"]:
            diff = [i for i, (a, b) in enumerate(zip(plain["losses"], under["losses"])) if a != b]
            row["failures"].append(f"{mode}: losses differ at steps {diff[:8]}")
        if stats["steps_detected"] != plain["steps"]:
            row["failures"].append(f"{mode}: {stats['steps_detected']} of {plain['steps']} steps detected")
        # What the program says itself (with its own time stamps) is not Sentinel's: every line of Sentinel's
        # starts "sentinel" or "[sentinel".
        ours = [l for l in err.splitlines() if l.startswith(("sentinel", "[sentinel")) and l not in plain_err]
        if ours:
            row["failures"].append(f"{mode}: stderr: {' | '.join(ours)[:300]}")
        row[f"{mode}_period"] = stats["step_period_events"]
        if mode != "managed":
            continue
        for k in ("managed_steps", "fallback_steps", "reprofiles", "replans", "late_prefetches", "plan_fidelity",
                  "first_managed_step", "dry_run", "bytes_migrated_per_step", "plans"):
            row[k] = stats.get(k)
        first = stats.get("first_managed_step", -1)
        # Steps are numbered from 0; the plan is in force from step `first` to the last (steps - 1).
        expected = plain["steps"] - first if first >= 0 else 0
        if not stats.get("dry_run"):
            row["failures"].append("not a dry run")
        if first < 0:
            row["failures"].append("no plan was ever in force")
        if stats["fallback_steps"] > opts.max_fallback_share * expected:
            row["failures"].append(f"{stats['fallback_steps']} fallback steps of the {expected} after planning")
        if stats["reprofiles"] != 0:
            row["failures"].append(f"{stats['reprofiles']} re-profiles")
        if first >= 0 and stats["managed_steps"] + stats["fallback_steps"] != expected:
            row["failures"].append(f"{stats['managed_steps']} managed steps and {stats['fallback_steps']} fallback "
                                   f"steps of the {expected} after planning")
        if opts.plan_by_step is not None and first > opts.plan_by_step:
            row["failures"].append(f"the plan was in force from step {first}, not by step {opts.plan_by_step}")
        # A dry run drops the tails of parked extents in its books only (preload/runtime.cc, drop_parked_tail).
        row["parked_tails_kept_bytes"] = stats.get("parked_tails_kept_bytes")
        if stats.get("parked_tails_kept_bytes") != stats.get("parked_tails_dropped_bytes"):
            row["failures"].append(f"{stats.get('parked_tails_dropped_bytes')} bytes of parked tails dropped, "
                                   f"{stats.get('parked_tails_kept_bytes')} of them kept")
    # The memory Sentinel holds: managed mode has two pools whose caches must not keep extents the other one
    # needs (object_heap.h), so at its peak the live objects and the fast pool's cache hold about what track
    # mode's heap holds (moves may delay a recycle a little). A birth may take a cached extent of a larger class,
    # up to 2x (preload/runtime.cc, kParkedFitFactor), so the extents carved say little (that class carves for
    # its own next birth; densenet121 at 128 px: 897 MiB carved in track mode, 1,186 MiB managed, both heaps'
    # peaks 897-910 MiB resident); the heap's resident peak is what the process's RSS sees. The cross-pool
    # fault this check was written for held +29% (docs/placement.md): the fast pool carved for classes the
    # slow one kept. The slow pool's own cache is left out of it (what would be on the slow node of a tiered
    # machine): since a plan that moves is followed (persistent twins, 2026-12-07), densenet121 at 64 px holds
    # 30-150 MiB of slow cache at its heap's peak, 306-368 MiB in all against track mode's 302 MiB, and
    # 282-302 MiB without it. The whole heap may not go past 1.5x track mode's (the heap's own resident limit
    # is twice the live peak).
    if "track" in resident and "managed" in resident:
        row["carved_mb"] = {m: round(b / 2**20, 1) for m, b in carved.items()}
        row["heap_peak_mb"] = {m: round(b / 2**20, 1) for m, b in resident.items()}
        row["heap_peak_without_slow_cache_mb"] = round(without_slow_cache["managed"] / 2**20, 1)
        if without_slow_cache["managed"] > resident["track"] * 1.15 + (8 << 20):
            row["failures"].append(f"managed mode's live objects and fast cache held {without_slow_cache['managed'] >> 20} "
                                   f"MiB at the heap's peak, track mode's heap {resident['track'] >> 20} MiB")
        if resident["managed"] > resident["track"] * 1.5 + (8 << 20):
            row["failures"].append(f"managed mode's heap held {resident['managed'] >> 20} MiB at its peak, "
                                   f"track mode's {resident['track'] >> 20} MiB")
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("lib")
    p.add_argument("--arch", nargs="+", default=["resnet18"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--budget", default="20%")
    p.add_argument("--tier", default="optane")
    p.add_argument("--fake-data", action="store_true")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--program", default=PROGRAM, help="the training program (default: programs/zoo.py)")
    p.add_argument("--model-option", default="--arch", help="the program's option that names the model")
    p.add_argument("--program-args", default="", help="more arguments for the program, one string")
    p.add_argument("--max-fallback-share", type=float, default=0.0,
                   help="the share of the steps after planning that may fall back (steps with passes of their own)")
    p.add_argument("--plan-by-step", type=int, help="the step by which a plan must be in force")
    opts = p.parse_args()
    opts.program_args = shlex.split(opts.program_args)
    if not os.path.exists(opts.python):
        print(f"SKIP: no {opts.python} (scripts/install-deps.sh makes PyTorch 2's venv)")
        sys.exit(77)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in opts.arch:
            row = check_model(opts, arch, tmp)
            rows.append(row)
            keys = ("track_period", "managed_steps", "fallback_steps", "reprofiles", "replans", "late_prefetches",
                    "plan_fidelity", "plain_s", "track_s", "managed_s")
            print(f"{arch}: " + " ".join(f"{k}={row.get(k) if not isinstance(row.get(k), float) else round(row[k], 3)}"
                                         for k in keys) +
                  (" OK" if not row["failures"] else " FAIL: " + "; ".join(row["failures"])), flush=True)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=1)
    failed = [r["model"] for r in rows if r["failures"]]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
