#!/usr/bin/env bash
# The Debian package: CPack builds it, `dpkg -i` installs it on this Debian 12 machine, `sentinel run`
# works from the installed paths (with the Python module and the man pages), `dpkg -r` removes every
# file it installed and `dpkg -P` its last record (issue 13).
#
# It installs into the real system, so it needs root (CI runs as root). It refuses to touch a
# `sentinel` package from elsewhere, purges one an interrupted run of its own left, and purges its own
# on any exit. As
# another user it checks the package's contents and runs the command from an extracted copy instead.
# Exit 77 (skipped) only when dpkg is absent.
# Usage: deb_test.sh BUILD_DIR VERSION
set -u
build=$1
version=$2
here=$(cd "$(dirname "$0")" && pwd)
command -v dpkg > /dev/null && command -v dpkg-deb > /dev/null || { echo "SKIP: no dpkg"; exit 77; }
dir=$(mktemp -d)
installed_by_us=0
cleanup() {
  if [ "$installed_by_us" = 1 ]; then dpkg -P sentinel > /dev/null 2>&1; fi
  rm -rf "$dir"
}
trap cleanup EXIT
. "$here/../check_lib.sh"
finish() {
  checks_summary
  exit
}

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$dir/pkg" > "$dir/cpack.log" 2>&1
check "cpack -G DEB" test $? -eq 0 || cat "$dir/cpack.log"
deb=$(ls "$dir"/pkg/sentinel_*.deb 2> /dev/null | head -n 1)
check "package file ($deb)" test -f "$deb"
[ -f "$deb" ] || finish
check "package version" test "$(dpkg-deb -f "$deb" Version)" = "$version"
depends=$(dpkg-deb -f "$deb" Depends)
check "Depends names the runtime's libraries ($depends)" grep -q libnuma <<< "$depends"
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' > "$dir/contents"
for f in /usr/bin/sentinel /usr/lib/libsentinel.so /usr/include/sentinel/sentinel.h /usr/lib/pkgconfig/sentinel.pc \
         /usr/lib/cmake/Sentinel/SentinelConfig.cmake /usr/lib/python3/dist-packages/sentinel/__init__.py \
         /usr/share/man/man1/sentinel-run.1; do
  check "package holds $f" grep -qx -- "$f" "$dir/contents"
done

probe='import sentinel, sys; sys.exit(0 if sentinel.active() and "live_bytes" in sentinel.stats() else 3)'
if [ "$(id -u)" -ne 0 ]; then
  echo "not root: checking an extracted copy instead of dpkg -i / dpkg -r"
  dpkg-deb -x "$deb" "$dir/root"
  (cd "$dir" && PYTHONPATH=$dir/root/usr/lib/python3/dist-packages "$dir/root/usr/bin/sentinel" run --quiet -- \
    /usr/bin/python3 -c "$probe")
  check "sentinel run from the extracted package" test $? -eq 0
  finish
fi

# A package left by an interrupted run of this test (same maintainer) is purged; any other is left alone.
if [ -n "$(dpkg-query -W -f='${Status}' sentinel 2> /dev/null)" ]; then
  if [ "$(dpkg-query -W -f='${Maintainer}' sentinel)" = "$(dpkg-deb -f "$deb" Maintainer)" ]; then
    echo "purging a sentinel package left by an earlier run"
    dpkg -P sentinel > /dev/null 2>&1
  else
    echo "FAILED: another sentinel package is installed; not touching it"
    failures=$((failures + 1))
    finish
  fi
fi
installed_by_us=1
dpkg -i "$deb" > "$dir/dpkg-i.log" 2>&1
check "dpkg -i" test $? -eq 0 || cat "$dir/dpkg-i.log"
check "/usr/bin/sentinel --version" test "$(/usr/bin/sentinel --version)" = "sentinel $version"
# From a neutral directory and environment, so only the installed files can be found.
(cd "$dir" && env -u PYTHONPATH -u LD_PRELOAD -u LD_LIBRARY_PATH /usr/bin/sentinel run --quiet \
  --stats "$dir/stats.json" -- /usr/bin/python3 -c "$probe")
check "sentinel run with the installed library and Python module" test $? -eq 0
check "stats written" grep -q '"objects_tracked"' "$dir/stats.json"
# pkg-config finds it on its default path; a program built with its flags runs with Sentinel.
cc -o "$dir/pc_consumer" "$here/consumer/consumer.c" $(env -u PKG_CONFIG_PATH pkg-config --cflags --libs sentinel)
check "built with pkg-config --cflags --libs sentinel" test $? -eq 0
check "that program runs with the installed library" grep -qE '^active 1 objects_tracked [1-9]' <<< "$("$dir/pc_consumer")"
check "man finds sentinel-run" test -n "$(man -w sentinel-run 2> /dev/null)"

dpkg -r sentinel > "$dir/dpkg-r.log" 2>&1
check "dpkg -r" test $? -eq 0 || cat "$dir/dpkg-r.log"
check "dpkg -r warned about nothing" test -z "$(grep -i warning "$dir/dpkg-r.log")"
# CPack adds a postrm (ldconfig) for a library under /usr/lib, so dpkg keeps a config-files record
# until the package is purged.
check "package no longer installed" test -z "$(dpkg-query -W -f='${Status}' sentinel 2> /dev/null | grep 'ok installed')"
left=0
while read -r f; do
  case "$f" in /usr/bin/sentinel|/usr/lib/libsentinel.so|/usr/include/sentinel*|/usr/lib/pkgconfig/sentinel.pc|\
    /usr/lib/cmake/Sentinel*|/usr/lib/python3/dist-packages/sentinel*|/usr/share/man/man1/sentinel*)
      if [ -e "$f" ]; then echo "  left behind: $f"; left=$((left + 1)); fi ;;
  esac
done < "$dir/contents"
check "every file and directory of the package removed" test "$left" -eq 0
dpkg -P sentinel > "$dir/dpkg-p.log" 2>&1
check "dpkg -P" test $? -eq 0 || cat "$dir/dpkg-p.log"
installed_by_us=0
check "no record of the package left" test -z "$(dpkg-query -W -f='${Status}' sentinel 2> /dev/null)"
finish
