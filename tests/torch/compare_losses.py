#!/usr/bin/python3
"""Runs scripts/train.py twice, without and with libsentinel.so preloaded, and checks that
  - the loss sequences are bit-identical (compared as float.hex strings),
  - Sentinel detected exactly as many training steps as the program ran, and tracked objects.
Usage: compare_losses.py LIBSENTINEL TRAIN_PY [train.py args...]
"""
import json
import os
import subprocess
import sys
import tempfile


def run(train, args, env_extra, out):
    env = dict(os.environ)
    env.update(env_extra)
    cmd = ["/usr/bin/python3", train, "--quiet", "--out", out] + args
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}\n{proc.stderr}")
    with open(out) as f:
        return json.load(f), proc.stderr


def main():
    lib, train, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        plain, _ = run(train, args, {"LD_PRELOAD": ""}, os.path.join(tmp, "plain.json"))
        stats_path = os.path.join(tmp, "stats.json")
        env = {"LD_PRELOAD": lib, "SENTINEL_STATS": stats_path, "SENTINEL_LOG": "warn"}
        under, stderr = run(train, args, env, os.path.join(tmp, "sentinel.json"))
        if not os.path.exists(stats_path):
            sys.exit(f"FAIL: the run under Sentinel exited 0 but wrote no SENTINEL_STATS file; its stderr:\n{stderr}")
        with open(stats_path) as f:
            stats = json.load(f)
        # Only the training process writes output: no forked child (a DataLoader worker) wrote a file.
        extra = sorted(set(os.listdir(tmp)) - {"plain.json", "stats.json", "sentinel.json"})
    steps = plain["steps"]
    print(f"model {plain['model']}: {steps} steps; losses plain {plain['losses'][:3]}...")
    print(f"sentinel stats: steps_detected={stats['steps_detected']} period={stats['step_period_events']} "
          f"objects={stats['objects_tracked']} peak={stats['peak_object_bytes']}")
    failures = []
    if plain["losses"] != under["losses"]:
        diff = [i for i, (a, b) in enumerate(zip(plain["losses"], under["losses"])) if a != b]
        failures.append(f"losses differ at steps {diff[:10]}")
    if stats["steps_detected"] != steps:
        failures.append(f"steps_detected {stats['steps_detected']} != {steps}")
    if stats["objects_tracked"] <= 0:
        failures.append("no objects tracked")
    if extra:
        failures.append(f"unexpected files written: {extra}")
    if stats["invalid_frees"] != 0:
        failures.append(f"{stats['invalid_frees']} invalid frees")
    if stderr.strip():
        failures.append(f"unexpected stderr under Sentinel: {stderr.strip()[:500]}")
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("OK: bit-identical losses, every step detected")


if __name__ == "__main__":
    main()
