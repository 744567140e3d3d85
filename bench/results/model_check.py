#!/usr/bin/python3
"""model_check.py OUT_DIR...: the cost model's prediction for each managed cell's executed steps next to
what the slow-tier emulator measured (docs/results.md, "Model check").

For every managed cell <w>.managed-P in OUT_DIR (bench/results/run.sh keeps its profile, the executed
timeline and Sentinel's stats) it runs `sentinel replay PROFILE --timeline TIMELINE --json` and sets
(a cell without a timeline, run.sh --timeline-steps 0: the replayed plan, at the budget Sentinel's stats
report, in place of the executed steps):
  - the modeled slow-tier accesses per executed step (slow_accesses, cache lines: x 64 B = slow_bytes)
    against the measured slow-node misses per step (x 64 B);
  - the modeled executed step / modeled all-DRAM step against the measured virtual step / the
    all-fast cell's virtual step.
The profile's phase durations are the guest's wall clock, dilated by TCG; the replay divides them by
the dilation (--compute-scale), taken as the profile's step over the all-fast cell's virtual step, so
that the modeled all-DRAM step IS the measured all-fast step and the slow-tier terms (tier-model ns) and
the compute are in one clock. Migration: the channel Sentinel measured in the guest (bytes moved /
time moving, both wall clock), converted to the same clock (x the dilation). Steady = the last 5
executed steps and the last 5 measured steps (table.py's rule). Nothing is estimated where a file is
missing: the row says what is missing.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

STEADY = 5


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def measured(cell):
    steps = cell["steps"][-STEADY:]
    return (median([s["slow_read_misses"] + s["slow_write_misses"] for s in steps]),
            median([s["fast_read_misses"] + s["fast_write_misses"] for s in steps]),
            median([s["virtual_ns"] for s in steps]))


def replay(sentinel, profile, timeline, tier, budget, scale, migration_gbps):
    with tempfile.NamedTemporaryFile("w", suffix=".tier", delete=False) as f:
        f.write(f"base = {tier}\nmigration_bw_gbps = {migration_gbps:.6g}\n")
        tier_file = f.name
    cmd = [sentinel, "replay", profile, "--json", "--tier", tier_file, "--budget", budget,
           "--compute-scale", f"{scale:.6g}"] + (["--timeline", timeline] if timeline else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        os.unlink(tier_file)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[0] if r.stderr.strip() else f"exit {r.returncode}"
    return json.loads(r.stdout), ""


def check_cell(out, w, p, tier, sentinel, all_fast_dir=None):
    base = os.path.join(out, f"{w}.{p}")
    all_fast = os.path.join(out, f"{w}.all-fast.json")
    if not os.path.exists(all_fast) and all_fast_dir:
        all_fast = os.path.join(all_fast_dir, f"{w}.all-fast.json")
    paths = {"cell": base + ".json", "profile": base + ".profile.json", "timeline": base + ".timeline",
             "stats": base + ".sentinel-stats", "all-fast": all_fast,
             "plugin": os.path.join(out, "plugin-stats.json")}
    missing = [k for k, v in paths.items() if not os.path.exists(v) or os.path.getsize(v) == 0]
    # A cell run without a timeline (run.sh --timeline-steps 0) is checked against the plan instead of
    # the executed steps: right only while the plan held in the measured steps (the row says which).
    has_timeline = "timeline" not in missing
    missing = [k for k in missing if k != "timeline"]
    if missing:
        return {"workload": w, "placement": p, "error": "missing " + ", ".join(missing)}
    load = lambda k: json.load(open(paths[k]))  # noqa: E731
    cell, fast_cell, profile, stats = load("cell"), load("all-fast"), load("profile"), load("stats")
    slow_m, fast_m, virt = measured(cell)
    fast_virt = measured(fast_cell)[2]
    profile_step = sum(ph["duration_ns"] for ph in profile["phases"])
    scale = profile_step / fast_virt  # wall-clock ns of the guest per virtual ns
    moved = stats.get("bytes_to_fast", 0) + stats.get("bytes_to_slow", 0)
    wall_gbps = moved / (stats["migration_seconds"] * 1e9) if stats.get("migration_seconds") else 0
    migration_gbps = wall_gbps * scale if wall_gbps > 0 else 3.3
    if has_timeline:
        with open(paths["timeline"]) as f:
            budget = str(json.loads(f.readline())["budget_bytes"])
    else:
        budget = str(stats["fast_budget_bytes"])  # what managed mode planned with
    rows, err = replay(sentinel, paths["profile"], paths["timeline"] if has_timeline else None, tier,
                       p.split("-")[-1] + "%" if has_timeline else budget, scale, migration_gbps)
    if rows is None:
        return {"workload": w, "placement": p, "error": "replay failed: " + err}
    planned = next(r for r in rows if r["policy"] == "sentinel")
    executed = [r for r in rows if r["policy"].startswith("executed step")][-STEADY:] if has_timeline \
        else [planned]
    if not executed:
        return {"workload": w, "placement": p, "error": "the timeline has no managed step"}
    # The planner under three channels, without the timeline: what managed mode planned with in the
    # guest (its wall clock, the channel it measured), the same in the virtual clock, and the virtual
    # clock with the tier preset's channel (what a real machine's move_pages would give).
    channels = {}
    for name, sc, bw in (("guest wall clock", 1.0, wall_gbps or 3.3), ("virtual clock", scale, migration_gbps),
                         ("virtual, preset channel", scale, 3.3)):
        alt, err = replay(sentinel, paths["profile"], None, tier, budget, sc, bw)
        if alt is None:
            channels[name] = {"error": err}
            continue
        row = next(r for r in alt if r["policy"] == "sentinel")
        channels[name] = {"ratio": row["step_time_ratio"], "migrated_bytes": row["migrated_bytes"],
                          "slow_accesses": row["slow_accesses"], "gbps": bw}
    params = load("plugin")["parameters"]
    penalty_ns = (params["slow_latency_ns"] - params["fast_latency_ns"]) / params["mlp"]
    return {
        "channels": channels,
        "latency_term_ratio": 1 + slow_m * penalty_ns / fast_virt,
        "workload": w, "placement": p, "scale": scale, "basis": "executed" if has_timeline else "plan", "migration_wall_gbps": wall_gbps,
        "migration_model_gbps": migration_gbps,
        "executed_steps": len(executed), "deviated_steps": sum("left the plan" in r["policy"] for r in executed),
        "pred_slow_accesses": median([r["slow_accesses"] for r in executed]),
        "pred_fast_accesses": median([r["fast_accesses"] for r in executed]),
        "pred_slow_bytes": median([r["slow_bytes"] for r in executed]),
        "pred_ratio": median([r["step_time_ratio"] for r in executed]),
        "pred_migrated_bytes": median([r["migrated_bytes"] for r in executed]),
        "planned_ratio": planned["step_time_ratio"], "planned_slow_accesses": planned["slow_accesses"],
        "meas_slow_misses": slow_m, "meas_fast_misses": fast_m, "meas_slow_bytes": slow_m * 64,
        "meas_ratio": virt / fast_virt,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dirs", nargs="+")
    ap.add_argument("--sentinel", default=os.path.join(os.environ.get("SENTINEL_BUILD_DIR", os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")), "bin", "sentinel"))
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--all-fast-from", help="directory of the all-fast cells when an OUT_DIR has none")
    args = ap.parse_args()
    results = []
    for out in args.out_dirs:
        stats_path = os.path.join(out, "plugin-stats.json")
        tier = json.load(open(stats_path))["parameters"]["tier"] if os.path.exists(stats_path) else "optane"
        for path in sorted(glob.glob(os.path.join(out, "*.managed-*.json"))):
            name = os.path.basename(path)
            if name.endswith(".profile.json"):
                continue
            w, p = name[:-len(".json")].rsplit(".", 1)
            r = check_cell(out, w, p, tier, args.sentinel, args.all_fast_from)
            r["tier"] = tier
            results.append(r)
    print("Model check: the cost model's prediction for the executed steps (sentinel replay --timeline) "
          "next to the emulator's measurement; medians of the last 5 steps. Slow traffic in accesses "
          "(64 B lines) per step; ratios to all-fast (modeled: to the replay's all-DRAM step).\n")
    print("| workload | cell | tier | wall ns per virtual ns | slow accesses predicted | slow misses measured "
          "| slow MB predicted / measured | fast accesses predicted / misses measured "
          "| step ratio predicted | measured | slow misses x latency term | planned |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['workload']} | {r['placement']} | {r['tier']} | {r['error']} | | | | | | | | |")
            continue
        cell = r['placement'] + ("" if r["basis"] == "executed" else " (plan: no timeline)")
        print(f"| {r['workload']} | {cell} | {r['tier']} | {r['scale']:.0f} "
              f"| {r['pred_slow_accesses']:.0f} | {r['meas_slow_misses']:.0f} "
              f"| {r['pred_slow_bytes'] / 1e6:.2f} / {r['meas_slow_bytes'] / 1e6:.2f} "
              f"| {r['pred_fast_accesses']:.0f} / {r['meas_fast_misses']:.0f} "
              f"| {r['pred_ratio']:.3f}x | {r['meas_ratio']:.3f}x | {r['latency_term_ratio']:.3f}x "
              f"| {r['planned_ratio']:.3f}x |")
    print("\nA cell marked 'plan: no timeline' ran without the executed timeline (run.sh --timeline-steps 0): "
          "its prediction is the replayed plan, not the executed steps.\n")
    print("'slow misses x latency term' is the ratio the cost model's latency term (the emulator's too) gives "
          "the MEASURED slow misses: 1 + misses x (slow - fast latency) / mlp / all-fast virtual step.\n")
    print("Sentinel's plan for the same profile and budget under three migration channels (modeled ratio to "
          "all-DRAM, MB migrated per step, slow accesses per step):\n")
    print("| workload | cell | guest wall clock (channel as measured) | virtual clock (same channel) "
          "| virtual clock, preset channel 3.3 GB/s |")
    print("|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            continue
        cells = []
        for name in ("guest wall clock", "virtual clock", "virtual, preset channel"):
            c = r["channels"][name]
            cells.append(c.get("error") or f"{c['ratio']:.3f}x, {c['migrated_bytes'] / 1e6:.2f} MB, "
                         f"{c['slow_accesses']:.0f} ({c['gbps']:.3g} GB/s)")
        print(f"| {r['workload']} | {r['placement']} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
