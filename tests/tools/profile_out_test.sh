#!/usr/bin/env bash
# `sentinel profile` reports only a profile written by this run, at the path it was told (issue 8):
# a stale file at --out (or at SENTINEL_PROFILE_OUT) is removed before the program starts, and a
# profile at the default path is left alone when --out names another file.
# Usage: profile_out_test.sh SENTINEL_BIN KNOWN_PATTERN_BIN
set -u
sentinel=$1
program=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(cd "$(dirname "$0")" && pwd)/../check_lib.sh"
cd "$dir"

# 1. A program that records nothing: the stale --out file must not be reported as its profile.
echo stale > out.json
echo keep > sentinel-profile.json
"$sentinel" profile --quiet --out out.json -- /bin/true 2> err1.txt
code=$?
check "no profile: non-zero exit" test "$code" -ne 0
check "no profile: says so" grep -q "no profile recorded" err1.txt
check "stale --out file removed" test ! -e out.json
check "default-path profile left alone" grep -qx keep sentinel-profile.json

# 2. The same through SENTINEL_PROFILE_OUT, without --out.
echo stale > env.json
SENTINEL_PROFILE_OUT=env.json "$sentinel" profile --quiet -- /bin/true 2> err2.txt
check "no profile via SENTINEL_PROFILE_OUT: non-zero exit" test $? -ne 0
check "stale SENTINEL_PROFILE_OUT file removed" test ! -e env.json
check "default-path profile still left alone" grep -qx keep sentinel-profile.json

# 3. A program that does record one: it is written to --out (the last one wins, as for every option)
#    and summarised; the default path is untouched.
echo stale > real.json
"$sentinel" profile --quiet --out ignored.json --out real.json --sampler software -- \
  "$program" --mark --steps 6 > /dev/null 2> err3.txt
check "profile run: exit 0" test $? -eq 0
check "profile written to the last --out" grep -q '"objects"' real.json
check "summary names that file" grep -q "Sentinel profile: real.json" err3.txt
check "earlier --out not written" test ! -e ignored.json
check "default-path profile untouched" grep -qx keep sentinel-profile.json

checks_summary
