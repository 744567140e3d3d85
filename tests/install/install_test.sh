#!/usr/bin/env bash
# `cmake --install build --prefix P`: the installed layout works on its own (issue 13).
# Usage: install_test.sh BUILD_DIR VERSION
set -u
build=$1
version=$2
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
P=$dir/prefix
. "$here/../check_lib.sh"

cmake --install "$build" --prefix "$P" > "$dir/install.log" 2>&1
check "cmake --install" test $? -eq 0
for f in bin/sentinel lib/libsentinel.so include/sentinel/sentinel.h lib/pkgconfig/sentinel.pc \
         lib/cmake/Sentinel/SentinelConfig.cmake lib/cmake/Sentinel/SentinelConfigVersion.cmake \
         lib/cmake/Sentinel/SentinelTargets.cmake lib/python3/dist-packages/sentinel/__init__.py \
         share/man/man1/sentinel.1 share/man/man1/sentinel-run.1 share/man/man1/sentinel-profile.1; do
  check "installed $f" test -f "$P/$f"
done
check "sentinel --version" test "$("$P/bin/sentinel" --version)" = "sentinel $version"

# The installed command finds the installed library, and the installed Python module sees it.
cd "$dir"
PYTHONPATH=$P/lib/python3/dist-packages "$P/bin/sentinel" run --quiet --stats "$dir/stats.json" -- \
  /usr/bin/python3 -c 'import sentinel, sys; sys.exit(0 if sentinel.active() and sentinel.stats() else 3)'
check "sentinel run from the prefix, Python module active" test $? -eq 0
check "stats written" grep -q '"objects_tracked"' "$dir/stats.json"

# pkg-config, from the installed .pc only.
flags=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags --libs sentinel)
check "pkg-config --cflags --libs sentinel" test $? -eq 0
cc -o "$dir/pc_consumer" "$here/consumer/consumer.c" $flags
check "compiled and linked with pkg-config flags" test $? -eq 0
out=$(LD_LIBRARY_PATH=$P/lib "$dir/pc_consumer")
check "pkg-config consumer runs with Sentinel as its allocator ($out)" grep -qE '^active 1 objects_tracked [1-9]' <<< "$out"

# find_package(Sentinel) from a separate project.
cmake -S "$here/consumer" -B "$dir/consumer-build" -DCMAKE_PREFIX_PATH="$P" > "$dir/consumer.log" 2>&1 &&
  cmake --build "$dir/consumer-build" >> "$dir/consumer.log" 2>&1
check "find_package(Sentinel) project configures and builds" test $? -eq 0 || cat "$dir/consumer.log"
out=$("$dir/consumer-build/consumer")
check "Sentinel::sentinel consumer runs ($out)" grep -qE '^active 1 objects_tracked [1-9]' <<< "$out"
check "Sentinel::headers consumer runs without Sentinel" test "$("$dir/consumer-build/consumer_headers_only")" = "active 0"
out=$(LD_PRELOAD=$P/lib/libsentinel.so "$dir/consumer-build/consumer_headers_only")
check "Sentinel::headers consumer sees the preload ($out)" test "$out" = "active 1"

# Man pages: every option of every command's --help is in its page.
for page in "$P"/share/man/man1/sentinel*.1; do
  name=$(basename "$page" .1)
  cmd=${name#sentinel}
  cmd=${cmd#-}
  help=$("$P/bin/sentinel" $cmd --help 2>&1)
  text=$(MANWIDTH=200 man -l "$page" 2>/dev/null)
  check "man $name renders" test -n "$text"
  for opt in $(grep -o -- '--[a-z][a-z-]*' <<< "$help" | sort -u); do
    grep -q -- "$opt" <<< "$text" || { echo "  $name lacks $opt"; failures=$((failures + 1)); }
  done
done

checks_summary
