#!/usr/bin/env bash
# Installs every build, test and run-time dependency of Sentinel from Debian's apt.
# Used by README.md and by .ci/run, so a fresh Debian 12 machine needs nothing else.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libnuma-dev numactl hwloc
  libmemkind-dev
  libpfm4-dev
  libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
  # The `sentinel` command's option parsing (header-only CLI11).
  libcli11-dev
  libunwind-dev
  # The exact MILP reference of `sentinel replay --optimal` (src/plan/milp_cbc.cc).
  coinor-libcbc-dev
  clang libclang-rt-14-dev
  python3-torch libopenblas0-pthread
  # Installing and packaging: man pages from --help, the .deb (dpkg-shlibdeps), man for its test.
  help2man dpkg-dev man-db
  # `sentinel report` is tested by rendering it in headless Chromium; with --no-install-recommends it
  # needs a font (DejaVu) and fontconfig to draw text in the screenshot.
  chromium fonts-dejavu-core fontconfig
  # The two-node NUMA guest (scripts/numa-guest.sh).
  qemu-system-x86 busybox-static cpio
  # Instruction counts without a PMU: bench/manage/event_cost.py (callgrind and its client requests).
  valgrind
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}"
