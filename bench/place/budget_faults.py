#!/usr/bin/python3
"""Page faults a fast budget costs: minor faults per steady training step, without Sentinel and under
Sentinel with a budget (track: first-touch; managed), side by side in one run, on a faked two-node
topology (binds to the fake node fail and are counted; the heap's page reuse, which is what this
measures, runs for real).

Faults per step are the difference of two runs of the same program, S and 3S steps, divided by 2S, so
`import torch` and the first steps cancel out. Under a budget a freed fast extent used to return its
pages to the kernel on every free, so each step faulted its fast objects in again; parked extents
(docs/placement.md) keep them.

  bench/place/budget_faults.py [--build-dir build-cc] [--steps 20] [--budget 20%] [--min-object 8K]
                               [-- TRAIN_ARGS...]
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from fake_sysfs import fake_two_node_sysfs  # noqa: E402
# The guest benchmark's MLP (bench/results/guest_step.py): small tensors, many of them per step.
DEFAULT_ARGS = ["--model", "mlp", "--batch", "8", "--width", "384", "--depth", "3", "--features", "384",
                "--optimizer", "sgd", "--threads", "1"]


def minor_faults(env, train_args, steps):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "train.py"), "--quiet", "--steps",
                    str(steps)] + train_args, env=env, check=True, stdout=subprocess.DEVNULL)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--budget", default="20%")
    p.add_argument("--min-object", default="8K")
    p.add_argument("train_args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    train_args = [x for x in a.train_args if x != "--"] or DEFAULT_ARGS
    lib = os.path.join(a.build_dir, "lib", "libsentinel.so")
    if not os.path.exists(lib):
        sys.exit(f"budget_faults: {lib} not found (--build-dir)")
    with tempfile.TemporaryDirectory() as tmp:
        base = dict(os.environ, OMP_NUM_THREADS="1")
        sentinel = dict(base, LD_PRELOAD=lib, SENTINEL_SYSFS_ROOT=fake_two_node_sysfs(os.path.join(tmp, "sys")),
                        SENTINEL_FAST_BUDGET=a.budget, SENTINEL_MIN_OBJECT=a.min_object, SENTINEL_LOG="warn")
        cells = [("without Sentinel", base), (f"track, budget {a.budget}", dict(sentinel, SENTINEL_MODE="track")),
                 (f"managed, budget {a.budget}", dict(sentinel, SENTINEL_MODE="managed"))]
        per_step = {}
        for name, env in cells:
            short, long = minor_faults(env, train_args, a.steps), minor_faults(env, train_args, 3 * a.steps)
            per_step[name] = (long - short) / (2 * a.steps)
    plain = per_step["without Sentinel"]
    print(f"minor page faults per steady step ({' '.join(train_args)}; {a.steps} and {3 * a.steps} steps)")
    for name, v in per_step.items():
        extra = f", {v - plain:+.0f} against without" if name != "without Sentinel" else ""
        print(f"  {name:24s} {v:8.0f}{extra}")


if __name__ == "__main__":
    main()
