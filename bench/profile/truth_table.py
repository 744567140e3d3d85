#!/usr/bin/python3
"""truth_table.py OUT_DIR WORKLOADS [TRUTH_DIR]: the table of bench/profile/truth.sh (docs/profiler.md).

One row per workload: the truth's traffic per step (emulated PEBS at period 1, KiB of reads + writes +
write-backs per step over the objects; the software sampler's is the lines it saw touched), the
software sampler's traffic error (with and without
write-backs), its hot objects reported untouched (count and their share of the truth's traffic), the
Spearman rank correlation of object hotness, the read/write split error (over the pairs both saw), the
write share of all misses in each, and the truth's lost samples.
"""
import json
import os
import sys


def fmt(v, digits=2):
    return "n/a" if v is None else f"{v:.{digits}f}"


def main():
    out, workloads = sys.argv[1], sys.argv[2].split(",")
    truth_dir = sys.argv[3] if len(sys.argv) > 3 else None  # truth.sh --truth-dir: DIR/<w>.truth.json
    print("| workload | objects | truth KiB/step | software KiB/step | traffic error | miss traffic error "
          "| hot reported untouched (share of truth) | Spearman | r/w split error | write share truth / software "
          "| truth lost |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for w in workloads:
        path = os.path.join(out, f"{w}.diff.json")
        if not os.path.exists(path):
            print(f"| {w} | (no diff: see {w}.*.err) ||||||||||")
            continue
        with open(path) as f:
            d = json.load(f)
        truth_path = (os.path.join(truth_dir, f"{w}.truth.json") if truth_dir
                      else os.path.join(out, f"{w}.pebs.profile.json"))
        with open(truth_path) as f:
            truth = json.load(f)
        hot_bytes = sum(o["truth"]["read_bytes"] + o["truth"]["write_bytes"] + o["truth"]["writeback_bytes"]
                        for o in d["untouched_hot"])
        share = hot_bytes / d["truth_bytes"] if d["truth_bytes"] else 0
        objects = len(d["objects"]) - d["other_only"]
        print(f"| {w} | {objects} | {d['truth_bytes'] / 1024:.0f} | {d['other_bytes'] / 1024:.0f} "
              f"| {fmt(d['traffic_error'])} | {fmt(d['miss_traffic_error'])} "
              f"| {len(d['untouched_hot'])} ({100 * share:.0f}%) | {fmt(d['spearman'])} | {fmt(d['rw_split_error'])} "
              f"| {fmt(d['truth_write_share'])} / {fmt(d['other_write_share'])} | {truth.get('samples_lost', 0)} |")


if __name__ == "__main__":
    main()
