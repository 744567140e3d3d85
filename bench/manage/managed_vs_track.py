#!/usr/bin/python3
"""Managed mode's own cost: the same PyTorch training run under track mode (first-touch placement under the
budget, nothing moves) and under managed mode (profile, plan, move every step), side by side, alternating, in
one run. Prints the ratio of median steady-state step times (managed / track) and, separately, the CPU time
the migration engine spent moving pages.

  managed_vs_track.py --build-dir build [--rounds 3] [--steps 16] [--last 6] [-- TRAIN_ARGS...]

On a machine with one memory node managed mode runs as track mode (nothing to move): the ratio shows that it
costs nothing there. In the two-node guest (scripts/numa-guest.sh) node 1 is no slower than node 0, so the
ratio is Sentinel's own overhead (profiling is excluded: only the last --last steps, all managed, count):
  scripts/numa-guest.sh /usr/bin/python3 bench/manage/managed_vs_track.py --build-dir build --rounds 2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# In the guest (SENTINEL_IN_GUEST=1) a small MLP, as PyTorch runs about 3,000 times slower there; on the host
# the main job's MLP, whose steps are long enough to time.
GUEST_ARGS = ["--model", "mlp", "--steps", "16", "--batch", "32", "--width", "256", "--depth", "3",
              "--features", "128", "--threads", "1"]
HOST_ARGS = ["--model", "mlp", "--steps", "16", "--threads", "1"]


def run(lib, mode, train_args, budget, min_object):
    with tempfile.TemporaryDirectory() as tmp:
        out, stats = os.path.join(tmp, "out.json"), os.path.join(tmp, "stats.json")
        env = dict(os.environ, LD_PRELOAD=lib, SENTINEL_MODE=mode, SENTINEL_FAST_BUDGET=budget,
                   SENTINEL_MIN_OBJECT=min_object, SENTINEL_STATS=stats, OMP_NUM_THREADS="1")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "train.py"), "--quiet", "--out", out]
                       + train_args, env=env, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            times = json.load(f)["step_seconds"]
        with open(stats) as f:
            return times, json.load(f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--last", type=int, default=6, help="steady steps compared (the last N of each run)")
    p.add_argument("--budget", default="20%")
    p.add_argument("--min-object", default=None, help="default 16K in the guest, 64K on the host")
    p.add_argument("train_args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    in_guest = os.environ.get("SENTINEL_IN_GUEST") == "1"
    train_args = [x for x in a.train_args if x != "--"] or (GUEST_ARGS if in_guest else HOST_ARGS)
    if a.min_object is None:
        a.min_object = "16K" if in_guest else "64K"
    lib = os.path.join(os.path.abspath(a.build_dir), "lib", "libsentinel.so")
    medians = {"track": [], "managed": []}
    move_seconds, managed_steps, fallback, fidelity = [], [], [], []
    for r in range(a.rounds):
        for mode in (("track", "managed") if r % 2 == 0 else ("managed", "track")):
            times, st = run(lib, mode, train_args, a.budget, a.min_object)
            medians[mode].append(statistics.median(times[-a.last:]))
            if mode == "managed":
                move_seconds.append(st.get("migration_seconds", 0.0))
                managed_steps.append(st.get("managed_steps", 0))
                fallback.append(st.get("fallback_steps", 0))
                fidelity.append(st.get("plan_fidelity", 0.0))
            print(f"round {r} {mode:8s} median of last {a.last} steps {medians[mode][-1] * 1e3:9.2f} ms "
                  f"(mode at exit: {st['mode']}, moves {st.get('migrations_done', 0)})", flush=True)
    ratios = [m / t for m, t in zip(medians["managed"], medians["track"])]
    print(f"\nmanaged / track step time: median {statistics.median(ratios):.3f} "
          f"(rounds {', '.join(f'{x:.3f}' for x in ratios)})")
    print(f"managed steps per run {managed_steps}, fallback steps {fallback}, plan fidelity "
          f"{', '.join(f'{x:.3f}' for x in fidelity)}")
    print(f"migration engine time per run (CPU spent moving pages, on its own thread): "
          f"{', '.join(f'{x:.3f} s' for x in move_seconds)}")


if __name__ == "__main__":
    sys.exit(main())
