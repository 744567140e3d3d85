#!/usr/bin/env bash
# A launch script exports the preload and a per-process stats path (SENTINEL_STATS=...-%p.json) to every
# process it starts: those that made no object in a training step (true, mktemp, cat, the shell, a program
# that allocates without steps) leave no file, the process that trains leaves its own; a fixed path is
# written whatever the process did (core/config.h).
# Usage: no_object_outputs_test.sh LIBSENTINEL
set -uo pipefail
lib="$1"
. "$(dirname "$0")/../check_lib.sh"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

LD_PRELOAD="$lib" SENTINEL_STATS="$dir/stats-%p.json" SENTINEL_TRACE="$dir/trace-%p.txt" /bin/sh -c "
  /bin/true
  /bin/mktemp -p '$dir' scratch.XXXXXX >/dev/null
  /bin/cat /etc/hostname >/dev/null
  /usr/bin/python3 -c 'blocks = [bytearray(1 << 20) for _ in range(8)]'
  /usr/bin/python3 -c '
for step in range(40):  # a loop whose allocations repeat: steps
    a, b = bytearray(1 << 20), bytearray(3 << 19)
    del a, b'"
stats_files=$(ls "$dir" | grep -c '^stats-')
check "one stats file, the training loop's ($stats_files)" [ "$stats_files" -eq 1 ]
check "it found the loop's steps" grep -q '"steps_detected": [1-9]' "$dir"/stats-*.json
check "one trace file" [ "$(ls "$dir" | grep -c '^trace-')" -eq 1 ]

LD_PRELOAD="$lib" SENTINEL_STATS="$dir/fixed.json" /bin/true
check "a fixed path is written by a process without objects" grep -q '"objects_tracked": 0' "$dir/fixed.json"
checks_summary
