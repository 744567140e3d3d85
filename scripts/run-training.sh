#!/usr/bin/env bash
# The main job: a real PyTorch training run under Sentinel. Sentinel detects the training steps,
# profiles two of them, and at the end prints what it saw, the access profile, and what that profile
# would cost under each placement policy on a tiered-memory model (modeled: this machine has one node).
# Extra arguments go to scripts/train.py (default: the 8-layer 1024-wide MLP, 20 steps).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
[ -x "$build/bin/sentinel" ] || bash "$root/scripts/build.sh"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--model mlp --steps 20)
profile="$build/main-job-profile.json"
"$build/bin/sentinel" profile --log info --out "$profile" -- /usr/bin/python3 "$root/scripts/train.py" "${args[@]}"
echo
echo "== What this profile would cost with 20% of its peak memory in DRAM (Optane model)"
"$build/bin/sentinel" replay "$profile" --budget 20% --tier optane
