#!/usr/bin/env bash
# The main job: a real PyTorch training run under Sentinel, ending with Sentinel's summary.
# Extra arguments go to scripts/train.py (e.g. --model cnn --steps 50).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
[ -x "$build/bin/sentinel" ] || bash "$root/scripts/build.sh"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--model mlp --steps 20)
exec "$build/bin/sentinel" run --log info -- /usr/bin/python3 "$root/scripts/train.py" "${args[@]}"
