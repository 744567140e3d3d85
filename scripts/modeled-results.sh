#!/usr/bin/env bash
# Prints the "Modeled" table of docs/results.md: for every committed profile, budgets 10/20/50% of its
# peak, the Optane and the measured-CXL tier models: Sentinel, the exact reference ("optimal"), the best
# baseline, the cost model's lower bound (all as modeled step time / modeled all-DRAM step time) and the
# share of the gap between the best baseline and all-DRAM that Sentinel closes.
# Usage: scripts/modeled-results.sh [TIME_LIMIT_S] [PROFILES...]   (builds into ./build if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-60}
shift || true
profiles=("$@")
if [ ${#profiles[@]} -eq 0 ]; then profiles=(profiles/*.json); fi
bin=${SENTINEL_BIN:-build/bin/sentinel}
[ -x "$bin" ] || bash scripts/build.sh >/dev/null
echo "| profile | tier | budget | sentinel | optimal | solver | best baseline | lower bound | gap closed | sentinel vs optimal |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for p in "${profiles[@]}"; do
  for tier in optane cxl-x8; do
    for b in 10 20 50; do
      if ! out=$("$bin" replay "$p" --tier "$tier" --budget "$b%" --json --optimal --time-limit "$limit" \
          --optimal-max-cells 40000); then
        echo "| $(basename "$p" .json) | $tier | $b% | replay failed (exit $?) |"
        continue
      fi
      printf '%s' "$out" |
        /usr/bin/python3 -c '
import json, sys
rows = {r["policy"]: r for r in json.load(sys.stdin)}
s, o, d = rows["sentinel"], rows["optimal"], rows["all-dram"]
best = min((r for n, r in rows.items() if n not in ("sentinel", "all-dram", "optimal")), key=lambda r: r["step_time_ns"])
gap = best["step_time_ns"] - d["step_time_ns"]
closed = (best["step_time_ns"] - s["step_time_ns"]) / gap if gap > 1e-9 else 1.0
st = o["solver_status"]
if st == "best-found": st += " (gap %.1f%%)" % (100 * o["solver_gap"])
solved = st.startswith("optimal") or st.startswith("best-found")
opt = "%.3f" % o["step_time_ratio"] if solved else "—"
vs = "%+.1f%%" % (100 * (s["step_time_ns"] / o["step_time_ns"] - 1)) if solved else "—"
print("| %s | %s | %s%% | %.3f | %s | %s | %.3f (%s) | %.3f | %.0f%% | %s |" % (
    sys.argv[1].split("/")[-1].replace(".json", ""), sys.argv[2], sys.argv[3], s["step_time_ratio"],
    opt, st, best["step_time_ratio"], best["policy"], o["lower_bound_ns"] / d["step_time_ns"],
    100 * closed, vs))
' "$p" "$tier" "$b"
    done
  done
done
