#!/usr/bin/env bash
# The main job: a real PyTorch training run under Sentinel.
#
#   run-training.sh [TRAIN_ARGS...]          on this machine
#   run-training.sh --guest [TRAIN_ARGS...]  in the two-node QEMU guest (scripts/numa-guest.sh)
#
# With a slow memory node (a CXL or PMem node, or the guest's node 1), Sentinel runs managed mode with 20% of
# the peak object bytes in DRAM: it finds the training step, profiles two steps, plans, and from then on
# moves tensors along the plan every step; the summary at the end says how many steps were managed and how
# closely the placement followed the plan. The profile and the executed timeline are then replayed by the
# cost model next to every baseline policy (modeled times, on the Optane model).
# With one memory node there is nothing to move: Sentinel says so, profiles, and replays the profile.
# Extra arguments go to scripts/train.py (default: the 8-layer 1024-wide MLP, 20 steps; in the guest a
# small MLP, because PyTorch runs about 3,000 times slower there).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
[ -x "$build/bin/sentinel" ] || bash "$root/scripts/build.sh"
sentinel="$build/bin/sentinel"

guest=0
if [ "${1:-}" = "--guest" ]; then
  guest=1
  shift
fi
args=("$@")
out="$build/main-job"
mkdir -p "$out"
profile="$out/profile.json"
timeline="$out/timeline.jsonl"
rm -f "$profile" "$timeline"

if [ "$guest" = 1 ]; then
  [ ${#args[@]} -gt 0 ] || args=(--model mlp --steps 14 --batch 32 --width 256 --depth 3 --features 128 --threads 1)
  echo "== Managed mode in the two-node guest (QEMU TCG: node 1 is a CPU-less memory node; importing torch takes a minute or two)"
  "$root/scripts/numa-guest.sh" --prepare >/dev/null
  quoted=$(printf '%q ' "${args[@]}")
  SENTINEL_GUEST_RW="$out" OMP_NUM_THREADS=1 "$root/scripts/numa-guest.sh" sh -c \
    "'$sentinel' run --fast-budget 20% --min-object 16K --log info --profile-out '$profile' --timeline '$timeline' -- /usr/bin/python3 '$root/scripts/train.py' $quoted"
elif "$sentinel" topology --json | /usr/bin/python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin).get("slow_node", -1) >= 0 else 1)'; then
  [ ${#args[@]} -gt 0 ] || args=(--model mlp --steps 20)
  echo "== Managed mode on this machine's fast and slow node"
  "$sentinel" run --fast-budget 20% --log info --profile-out "$profile" --timeline "$timeline" -- \
    /usr/bin/python3 "$root/scripts/train.py" "${args[@]}"
else
  [ ${#args[@]} -gt 0 ] || args=(--model mlp --steps 20)
  echo "== One memory node here: nothing to move, so Sentinel profiles the run and replays the profile (run with --guest for managed mode in a two-node guest)"
  "$sentinel" profile --log info --out "$profile" -- /usr/bin/python3 "$root/scripts/train.py" "${args[@]}"
fi

echo
echo "== What this profile costs with 20% of its peak memory in DRAM (Optane model; times MODELED)"
replay=("$sentinel" replay "$profile" --budget 20% --tier optane)
[ -s "$timeline" ] && replay+=(--timeline "$timeline") && echo "   (the 'executed step' rows are the managed steps as they ran, through the same model)"
"${replay[@]}"
