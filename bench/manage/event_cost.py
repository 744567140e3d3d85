#!/usr/bin/python3
"""Sentinel's own instructions per allocation event: a small PyTorch workload under no preload, track mode
and managed mode, counted by valgrind's callgrind (no PMU needed), side by side in one run.

Each mode runs once under callgrind with instrumentation off until the workload reaches step --first, then
counts every thread up to the end of step --last (bench/results/guest_step.py --callgrind-window, through
libsentinel_callgrind_window.so from the build), so start-up, import torch, profiling and planning stay out
(managed mode's plan is in force from about step 8: --first must be past that; the bench says when it is
not). Instructions are counted per thread: the training thread (the process's first) and all others
(Sentinel's service and migration threads, PyTorch's pool; these from step --first to the process's exit,
as callgrind's client request dumps only the thread that makes it). Per allocation event = the extra instructions
per step over no preload / the objects allocated per step (the step detector's period, SENTINEL_STATS).
Managed mode runs on a faked two-node topology (SENTINEL_SYSFS_ROOT, as the tests do), so the kernel
refuses its binds and moves here: the executor, the birth table and the service thread do their work per
event, the page copies do not happen. Kernel instructions (system calls, context switches) are not
counted by callgrind: the bench prints the wake-ups of the service thread per step instead (each is a
futex system call and a switch to that thread, which the guest's machine-wide counters do count).

  event_cost.py [--build-dir build] [--workload cnn] [--first 15] [--last 34] [--min-object 8K]
                [--budget 20%] [--timeline] [--modes none,track,managed] [--keep DIR]

About 3-4 minutes per mode for cnn on this 2-core VM. Not a test: no limits.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from ddp_ranks import fake_two_node_sysfs  # noqa: E402  the faked /sys tree the tests use


def thread_files(prefix):
    """The training thread's dump at the window's end, and the other threads' dumps at exit (a client
    request dumps only the thread that makes it; the others count from the window's start to exit)."""
    return sorted(glob.glob(prefix + ".1-01")) + sorted(f for f in glob.glob(prefix + "-*") if not f.endswith("-01"))


def thread_totals(prefix):
    """Instructions per thread, training thread first (see thread_files)."""
    totals = []
    for path in thread_files(prefix):
        with open(path) as f:
            for line in f:
                if line.startswith("totals:") or line.startswith("summary:"):
                    totals.append(int(line.split()[1]))
                    break
    return totals


def calls_to(prefix, function):
    """Calls to functions whose name contains `function`, over every thread (see thread_files)."""
    names, total = {}, 0
    for path in thread_files(prefix):
        callee = None
        with open(path) as f:
            for line in f:
                if line.startswith(("fn=", "cfn=", "cfi=", "cfl=", "fl=", "fi=", "fe=")) and "(" in line:
                    key, rest = line.rstrip("\n").split("=", 1)
                    ident, _, name = rest.partition(" ")
                    if key in ("fn", "cfn") and name:
                        names[ident] = name
                    if key == "cfn":
                        callee = names.get(ident, "")
                elif line.startswith("calls=") and callee is not None:
                    if function in callee:
                        total += int(line.split("=", 1)[1].split()[0])
                    callee = None
    return total


def run(args, mode, scratch):
    """One callgrind run: (training-thread instructions, other threads' instructions, stats, losses, wake-ups of
    futex wake calls), over the window."""
    out_dir = os.path.join(scratch, mode)
    os.makedirs(out_dir, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # %p: the process's id (the workload's helper processes, such as those of import torch, inherit the
    # preload and write their own stats).
    stats_pattern = os.path.join(out_dir, "stats.%p.json")
    if mode != "none":
        env.update(LD_PRELOAD=os.path.join(args.build_dir, "lib", "libsentinel.so"), SENTINEL_MODE=mode,
                   SENTINEL_MIN_OBJECT=args.min_object, SENTINEL_FAST_BUDGET=args.budget,
                   SENTINEL_STATS=stats_pattern, SENTINEL_LOG="error",
                   # The software sampler's protection faults do not survive valgrind (the workload dies in
                   # libtorch): the profile has lifetimes and phase times only. Sampling ends with profiling,
                   # before the counted steps, either way.
                   SENTINEL_SAMPLER="none")
        if mode == "managed":
            env["SENTINEL_SYSFS_ROOT"] = fake_two_node_sysfs(os.path.join(scratch, "sysfs"))
            if args.timeline:
                env["SENTINEL_TIMELINE"] = os.path.join(out_dir, "timeline.jsonl")
                env["SENTINEL_TIMELINE_STEPS"] = str(args.last + 1)
    prefix = os.path.join(out_dir, "callgrind.out")
    window = f"{os.path.join(args.build_dir, 'lib', 'libsentinel_callgrind_window.so')}:{args.first}:{args.last}"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
           f"--callgrind-out-file={prefix}", "--dump-line=no", "/usr/bin/python3",
           os.path.join(ROOT, "bench", "results", "guest_step.py"), "--workloads", args.workload,
           "--steps", str(args.last + 1), "--host", "--out-dir", out_dir, "--callgrind-window", window]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} ({mode}) failed with {p.returncode}:\n{stderr[-3000:]}")
    totals = thread_totals(prefix)
    if not totals:
        sys.exit(f"{mode}: no callgrind dump {prefix}.1-* (is valgrind/callgrind.h installed, the bench library built?)")
    stats = {}
    stats_path = stats_pattern.replace("%p", str(p.pid))  # valgrind runs python in its own process
    if os.path.exists(stats_path):
        with open(stats_path) as f:
            stats = json.load(f)
    with open(os.path.join(out_dir, f"{args.workload}.unnamed.json")) as f:
        losses = [s["loss"] for s in json.load(f)["steps"]]
    print(f"  {mode:8s} training thread {totals[0]:>14,d}  other threads {sum(totals[1:]):>12,d}  "
          f"({len(totals)} threads counted)", flush=True)
    return totals[0], sum(totals[1:]), stats, losses, calls_to(prefix, "futex_wake")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--workload", default="cnn")
    p.add_argument("--first", type=int, default=15, help="first counted step (0-based)")
    p.add_argument("--last", type=int, default=34, help="last counted step")
    p.add_argument("--min-object", default="8K")
    p.add_argument("--budget", default="20%")
    p.add_argument("--timeline", action="store_true", help="managed mode records every step's timeline")
    p.add_argument("--modes", default="none,track,managed")
    p.add_argument("--keep", help="keep callgrind's files in this directory")
    a = p.parse_args()
    a.build_dir = os.path.abspath(a.build_dir)
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (scripts/install-deps.sh installs it)")
    scratch = a.keep or tempfile.mkdtemp(prefix="event_cost.")
    os.makedirs(scratch, exist_ok=True)
    modes = a.modes.split(",")
    steps = a.last - a.first + 1
    per_step, wakes, losses = {}, {}, {}
    period = 0
    for mode in modes:
        training, others, stats, losses[mode], wake_calls = run(a, mode, scratch)
        per_step[mode] = (training / steps, others / steps)
        wakes[mode] = wake_calls / steps
        if mode != "none":
            period = period or stats.get("step_period_events", 0)
        if mode == "managed":
            first = stats.get("first_managed_step", -1)
            print(f"  managed: first managed step {first}, managed steps {stats.get('managed_steps')}, "
                  f"fallback steps {stats.get('fallback_steps')}")
            if first < 0 or first > a.first:
                print(f"  WARNING: the plan was not in force from step {a.first} on: the window counts profiling")
    if not a.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{a.workload}, SENTINEL_MIN_OBJECT={a.min_object}, {period} allocation events per step, steps "
          f"{a.first}-{a.last}{', timeline on' if a.timeline else ''}; instructions per step (callgrind, user space)")
    print(f"{'mode':8s} {'training':>12s} {'others':>12s} {'total':>12s} {'ratio':>6s} {'extra/event':>12s} "
          f"{'wakes/step':>10s}")
    base = sum(per_step["none"]) if "none" in per_step else None
    for mode in modes:
        total = sum(per_step[mode])
        ratio = f"{total / base:6.3f}" if base else "     -"
        extra = f"{(total - base) / period:12,.0f}" if base is not None and period else "           -"
        print(f"{mode:8s} {per_step[mode][0]:12,.0f} {per_step[mode][1]:12,.0f} {total:12,.0f} {ratio} {extra} "
              f"{wakes[mode]:10.1f}")
    if len({tuple(v) for v in losses.values()}) > 1:
        print("LOSSES DIFFER between modes:", {m: v[-3:] for m, v in losses.items()})
        return 1
    print("losses bit-identical across modes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
