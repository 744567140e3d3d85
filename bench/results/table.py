#!/usr/bin/python3
"""table.py OUT_DIR [--all-fast-from DIR]: the results table (markdown) from bench/results/run.sh's cell files.

Per cell, medians over the steady steps (all but the first): slow-node misses per step (loads and
store misses), bytes the kernel migrated per step, and the virtual step time as a ratio to the
workload's all-fast cell (from DIR when OUT_DIR has none: a run of managed cells alone, in a boot
of its own). Cells that were not run say so, never estimated.
"""
import glob
import json
import os
import statistics
import sys

ORDER = ["all-fast", "all-slow", "first-touch-20", "memtier-20", "linux-tiering-20", "autonuma-20",
         "linux-tiering-m20", "autonuma-m20", "static-plan-20", "managed-20", "first-touch-50", "memtier-50",
         "linux-tiering-50", "autonuma-50", "linux-tiering-m50", "autonuma-m50", "interleave", "static-plan-50",
         "managed-50"]


def steady(cell, key):
    # Managed cells: the last 5 steps, which run after the plan (warm-up, detection and profiling come first).
    # The kernel's cells too: the share is first held after step 0 (guest_step.py --node0-share), and NUMA
    # balancing's scanner then needs steps to find the hot pages on node 1.
    placement = cell.get("placement", "")
    if placement.startswith(("managed", "static-plan", "linux-tiering-", "autonuma-")):
        steps = cell["steps"][-5:]
    else:
        steps = cell["steps"][1:]
    vals = [s[key] for s in steps] or [s[key] for s in cell["steps"]]
    return statistics.median(vals)


def slow_misses(s):
    return s["slow_read_misses"] + s["slow_write_misses"]


def load_cells(out):
    cells = {}
    for path in glob.glob(os.path.join(out, "*.json")):
        name = os.path.basename(path)
        if name == "plugin-stats.json" or name.endswith((".profile.json", ".plan.json")):
            continue
        with open(path) as f:
            c = json.load(f)
        for s in c["steps"]:
            if "slow_read_misses" in s:
                s["slow_misses"] = slow_misses(s)
                s["migrated_bytes"] = s["pages_migrated"] * 4096
            # The kernel's demotions and promotions are also migrations (pgmigrate_success counts them).
            s["demoted_bytes"] = s.get("pages_demoted", 0) * 4096
            s["promoted_bytes"] = s.get("pages_promoted", 0) * 4096
            for suffix in ("", "_after_reclaim"):
                pages = s.get("anon_pages_per_node" + suffix)
                if pages:
                    s["node0_share" + suffix] = pages.get("0", 0) / max(1, sum(pages.values()))
            s["reclaim_demoted_bytes"] = s.get("node0_reclaim_demoted_pages", 0) * 4096
        cells[(c["workload"], c["placement"])] = c
    return cells


def main():
    args = sys.argv[1:]
    base_dir = None
    if "--all-fast-from" in args:
        i = args.index("--all-fast-from")
        base_dir = args[i + 1]
        del args[i:i + 2]
    out = args[0]
    cells = load_cells(out)
    if base_dir:
        for key, c in load_cells(base_dir).items():
            if key[1] == "all-fast":
                cells.setdefault(key, c)
    params = {}
    stats_path = os.path.join(out, "plugin-stats.json")
    if os.path.exists(stats_path):
        with open(stats_path) as f:
            params = json.load(f).get("parameters", {})
    workloads = sorted({w for w, _ in cells})
    placements = [p for p in ORDER if any((w, p) in cells for w in workloads)]
    print(f"Tier: {params.get('tier_description', '?')}; cpi {params.get('cpi', '?')} at "
          f"{params.get('freq_ghz', '?')} GHz; cache model {params.get('cache_bytes', 0) // 1024} KiB "
          f"{params.get('cache_ways', '?')}-way. Times are EMULATED (the plugin's virtual clock).\n")
    print("Per cell: virtual step time / all-fast, slow-node misses per step, MB migrated per step "
          "(medians of the steady steps).\n")
    print("| workload | " + " | ".join(placements) + " |")
    print("|---|" + "---|" * len(placements))
    for w in workloads:
        base = cells.get((w, "all-fast"))
        row = []
        for p in placements:
            c = cells.get((w, p))
            if c is None or "virtual_ns" not in c["steps"][0]:
                row.append("not run")
                continue
            v = steady(c, "virtual_ns")
            ratio = f"{v / steady(base, 'virtual_ns'):.2f}x" if base else "?"
            row.append(f"{ratio}, {steady(c, 'slow_misses'):.0f}, "
                       f"{steady(c, 'migrated_bytes') / 1e6:.1f}")
        print(f"| {w} | " + " | ".join(row) + " |")
    kernel = [p for p in placements if p.startswith(("linux-tiering-", "autonuma-"))]
    if kernel:
        print("\nThe kernel's placements, per step: MB demoted during the step (pgdemote_*) and by the reclaim "
              "that holds the share after it, MB promoted (pgpromote_success), and the share of the process's "
              "anonymous pages on node 0 (numa_maps) at the end of the step and after that reclaim; medians of "
              "the steady steps.\n")
        print("| workload | " + " | ".join(kernel) + " |")
        print("|---|" + "---|" * len(kernel))
        for w in workloads:
            row = []
            for p in kernel:
                c = cells.get((w, p))
                if c is None or "virtual_ns" not in c["steps"][0]:
                    row.append("not run")
                    continue
                last = c["steps"][-1]
                share = (f"{steady(c, 'node0_share') * 100:.0f}%" if "node0_share" in last else "?")
                if "node0_share_after_reclaim" in last:
                    share += f" -> {steady(c, 'node0_share_after_reclaim') * 100:.0f}%"
                row.append(f"{steady(c, 'demoted_bytes') / 1e6:.2f} (reclaim {steady(c, 'reclaim_demoted_bytes') / 1e6:.2f})"
                           f" / {steady(c, 'promoted_bytes') / 1e6:.2f}, node 0 {share}")
            print(f"| {w} | " + " | ".join(row) + " |")
    print("\nCalibration: the all-fast virtual step against the host's measured step (one thread).\n")
    print("| workload | host step ms | virtual all-fast ms | virtual/host | instructions/step "
          "| fast misses/step | CPI that matches the host |")
    print("|---|---|---|---|---|---|---|")
    for w in workloads:
        host, base = cells.get((w, "host")), cells.get((w, "all-fast"))
        if not host or not base:
            continue
        h = steady(host, "host_s") * 1e9
        v = steady(base, "virtual_ns")
        insns = steady(base, "instructions")
        fast = steady(base, "fast_read_misses") + steady(base, "fast_write_misses")
        cpi, ghz = float(params.get("cpi", 1)), float(params.get("freq_ghz", 3))
        compute = insns * cpi / ghz
        memory = v - compute  # the rest of the virtual time: miss latency or transfer
        match = (h - memory) / insns * ghz if h > memory and insns else float("nan")
        print(f"| {w} | {h / 1e6:.1f} | {v / 1e6:.1f} | {v / h:.2f} | {insns:.3g} | {fast:.3g} "
              f"| {match:.2f} |")


if __name__ == "__main__":
    main()
