#!/usr/bin/env bash
# A launch script exports the preload and a per-process stats path (SENTINEL_STATS=...-%p.json) to every
# process it starts: those that made no object (true, mktemp) leave no file, the process that made objects
# leaves its own; a fixed path is written whatever the process did (core/config.h). (cat with a file
# argument allocates a 128 KiB buffer, an object at the default SENTINEL_MIN_OBJECT, and writes one.)
# Usage: no_object_outputs_test.sh LIBSENTINEL
set -uo pipefail
lib="$1"
. "$(dirname "$0")/../check_lib.sh"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

LD_PRELOAD="$lib" SENTINEL_STATS="$dir/stats-%p.json" SENTINEL_TRACE="$dir/trace-%p.txt" /bin/sh -c "
  /bin/true
  /bin/mktemp -p '$dir' scratch.XXXXXX >/dev/null
  /usr/bin/python3 -c 'blocks = [bytearray(1 << 20) for _ in range(8)]; print(len(blocks))' >/dev/null"
stats_files=$(ls "$dir" | grep -c '^stats-')
empty_stats=$(grep -l '"objects_tracked": 0,' "$dir"/stats-*.json 2>/dev/null | wc -l)
python_stats=$(grep -l '"objects_tracked": [1-9][0-9]' "$dir"/stats-*.json 2>/dev/null | wc -l)
check "no stats file of a process without objects ($empty_stats of $stats_files)" [ "$empty_stats" -eq 0 ]
check "the stats file of the process that made objects" [ "$python_stats" -eq 1 ]
check "no trace file of a process without objects" \
  [ "$(ls "$dir" | grep -c '^trace-')" -eq "$stats_files" ]

LD_PRELOAD="$lib" SENTINEL_STATS="$dir/fixed.json" /bin/true
check "a fixed path is written by a process without objects" grep -q '"objects_tracked": 0' "$dir/fixed.json"
checks_summary
