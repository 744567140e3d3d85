#!/usr/bin/python3
"""Records a profile of scripts/train.py (default: the 8-layer MLP) with SENTINEL_MODE=profile and prints
what it says about the program's objects, per class:

  persistent objects (weights, gradients, optimizer state): size and the phases they are touched in,
      with each phase labelled F (forward: before the phase of peak live bytes), B (backward: from the
      peak on) or O (the step's last phase, where the optimizer runs without allocating);
  long-lived step-local objects (activations): birth and death phase, the phases with accesses, and the
      longest stretch of their lifetime without accesses (the gap between forward and backward use);
  short-lived step-local objects (alive for at most --short phases): how many, and their bytes;
  at the peak: the share of the live object bytes that is short-lived, long-lived step-local, and
  persistent.

  show_profile.py [--build-dir DIR] [--profile FILE (use an existing profile)] [--short N] [-- TRAIN ARGS]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def record(lib, train_args, path):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SENTINEL_")}
    env.update({"LD_PRELOAD": lib, "SENTINEL_MODE": "profile", "SENTINEL_PROFILE_OUT": path, "SENTINEL_LOG": "warn"})
    cmd = ["/usr/bin/python3", os.path.join(REPO, "scripts", "train.py")] + train_args + ["--quiet"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(path):
        sys.exit("%s failed:\n%s" % (" ".join(cmd), p.stderr[-3000:]))


def alive_phases(o, period):
    if o["persistent"]:
        return list(range(period))
    return [ph % period for ph in range(o["birth_phase"], o["death_phase"] + 1)]


def longest_gap(o, period):
    """Longest run of consecutive alive phases without accesses."""
    touched = {a[0] for a in o["accesses"] if a[1] + a[2] > 0}
    best = run = 0
    for ph in alive_phases(o, period):
        run = 0 if ph in touched else run + 1
        best = max(best, run)
    return best


def fmt_phases(o, label):
    return " ".join("%d%s%s" % (a[0], label(a[0]), "w" if a[2] > a[1] else "r") for a in o["accesses"] if a[1] + a[2] > 0)


def mib(b):
    return b / (1 << 20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.environ.get("SENTINEL_BUILD_DIR", os.path.join(REPO, "build")))
    ap.add_argument("--profile")
    ap.add_argument("--short", type=int, default=2, help="step-local objects alive at most this many phases are short-lived")
    ap.add_argument("train_args", nargs="*")
    args = ap.parse_args()
    train_args = args.train_args or ["--model", "mlp", "--steps", "12", "--mark-steps"]
    with tempfile.TemporaryDirectory() as scratch:
        path = args.profile
        if path is None:
            path = os.path.join(scratch, "profile.json")
            record(os.path.join(os.path.abspath(args.build_dir), "lib", "libsentinel.so"), train_args, path)
        with open(path) as f:
            prof = json.load(f)
    period, objs = prof["period"], prof["objects"]

    # Live bytes in each phase; the phase where they peak separates forward from backward.
    live = [0] * period
    for o in objs:
        for ph in alive_phases(o, period):
            live[ph] += o["size"]
    peak_phase = max(range(period), key=lambda p: live[p])

    def label(ph):
        return "O" if ph == period - 1 else ("F" if ph < peak_phase else "B")

    persistent = [o for o in objs if o["persistent"]]
    local = [o for o in objs if not o["persistent"]]
    short = [o for o in local if o["death_phase"] - o["birth_phase"] + 1 <= args.short]
    long_lived = [o for o in local if o["death_phase"] - o["birth_phase"] + 1 > args.short]

    print("profile of: %s" % prof.get("program", "?"))
    print("period %d events (phases), %d profiled steps, sampler %s, step %.1f ms, %d objects, peak %.1f MiB "
          "of live objects in phase %d (phases 0..%d forward F, %d..%d backward B, %d optimizer O)" % (
              period, prof["profiled_steps"], prof["sampler"], prof["step_time_ns"] / 1e6, len(objs),
              mib(live[peak_phase]), peak_phase, peak_phase - 1, peak_phase, period - 2, period - 1))

    print("\npersistent objects: %d, %.1f MiB (phase + F/B/O + r/w: first access read or write)" % (
        len(persistent), mib(sum(o["size"] for o in persistent))))
    kinds = {}
    for o in persistent:
        touched = [a for a in o["accesses"] if a[1] + a[2] > 0]
        labels = {label(a[0]) for a in touched}
        zeroed_first = any(a[0] == 0 and a[2] > a[1] for a in touched)  # optimizer.zero_grad() at the step start
        if zeroed_first and not any(label(a[0]) == "F" for a in touched if a[0] != 0):
            labels.discard("F")
        kind = ("weight-like (touched in forward and backward)" if {"F", "B"} <= labels else
                "gradient-like (zeroed in phase 0, then touched in backward)" if zeroed_first and "B" in labels else
                "gradient-like (first touched in backward)" if "B" in labels else
                "optimizer-state-like (touched only in the optimizer phase)" if labels == {"O"} else
                "untouched in the profiled steps" if not labels else "other")
        kinds.setdefault(kind, []).append(o)
    for kind, group in kinds.items():
        print("  %s: %d" % (kind, len(group)))
        for o in sorted(group, key=lambda o: min([a[0] for a in o["accesses"]] or [0])):
            print("    %7.2f MiB  %s" % (mib(o["size"]), fmt_phases(o, label) or "-"))

    print("\nlong-lived step-local objects (alive > %d phases): %d, %.1f MiB" % (
        args.short, len(long_lived), mib(sum(o["size"] for o in long_lived))))
    print("    %9s %6s %6s %5s  %s" % ("size", "birth", "death", "gap", "accesses (phase F/B/O r/w)"))
    for o in sorted(long_lived, key=lambda o: o["birth_phase"]):
        print("    %5.2f MiB %6d %6d %5d  %s" % (mib(o["size"]), o["birth_phase"], o["death_phase"],
                                              longest_gap(o, period), fmt_phases(o, label) or "-"))
    with_gap = [o for o in long_lived if longest_gap(o, period) >= 2]
    print("  %d of them have a gap of >= 2 phases without accesses inside their lifetime" % len(with_gap))

    print("\nshort-lived step-local objects (alive <= %d phases): %d, %.1f MiB allocated per step; "
          "%d with accesses recorded" % (args.short, len(short), mib(sum(o["size"] for o in short)),
                                         sum(1 for o in short if o["accesses"])))

    def live_at(group, ph):
        return sum(o["size"] for o in group if ph in alive_phases(o, period))
    total = live[peak_phase]
    print("\nat the peak (phase %d, %.1f MiB live): short-lived %.1f%%, long-lived step-local %.1f%%, persistent %.1f%%" % (
        peak_phase, mib(total), 100 * live_at(short, peak_phase) / total, 100 * live_at(long_lived, peak_phase) / total,
        100 * live_at(persistent, peak_phase) / total))
    max_short = max(live_at(short, ph) for ph in range(period))
    print("largest short-lived share in any phase: %.1f MiB (%.1f%% of the peak)" % (mib(max_short), 100 * max_short / total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
