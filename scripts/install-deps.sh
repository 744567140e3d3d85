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
  # Debian's torchvision, matching python3-torch 1.13 (the model zoo tests, tests/torch/zoo_managed.py).
  python3-torchvision
  # The virtual environment of today's PyTorch (below).
  python3-venv
  # Installing and packaging: man pages from --help, the .deb (dpkg-shlibdeps), man for its test.
  help2man dpkg-dev man-db
  # `sentinel report` is tested by rendering it in headless Chromium; with --no-install-recommends it
  # needs a font (DejaVu) and fontconfig to draw text in the screenshot.
  chromium fonts-dejavu-core fontconfig
  # The two-node NUMA guest (scripts/numa-guest.sh).
  qemu-system-x86 busybox-static cpio
  # Node 1 as dax kmem memory in the guest (SENTINEL_GUEST_NODE1=kmem): namespaces and dax devices.
  ndctl daxctl
  # Instruction counts without a PMU: bench/manage/event_cost.py (callgrind and its client requests).
  valgrind
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}"

# Today's PyTorch next to Debian's 1.13: PyTorch 2.x, the torchvision that matches it and Hugging Face
# transformers from PyPI, in a virtual environment of Debian's python3 outside the work tree (so a fresh
# clone, CI's, finds it made). PyPI's Linux wheel of torch is a CUDA build (torch 539 MB; with the CUDA
# libraries it loads at import, cuDNN, cuBLAS, NCCL, ..., 2.9 GB to download, about 1 minute here, and
# 6 GB installed); it runs on the CPU. The CPU-only wheels are not on PyPI. Pinned, so that tests see one
# version; `SENTINEL_TORCH2_VENV` moves it. Skipped when the venv already has these versions.
torch2_venv="${SENTINEL_TORCH2_VENV:-/opt/sentinel/torch2-venv}"
torch2_pins=(torch==2.15.0 torchvision==0.29.2 transformers==5.24.0)
if ! "$torch2_venv/bin/python" -c "import torch, torchvision, transformers, sys
sys.exit(0 if (torch.__version__, torchvision.__version__, transformers.__version__) == ('2.15.0', '0.29.2', '5.24.0') else 1)" \
    >/dev/null 2>&1; then
  "${sudo_cmd[@]}" mkdir -p "$(dirname "$torch2_venv")"
  "${sudo_cmd[@]}" /usr/bin/python3 -m venv "$torch2_venv"
  "${sudo_cmd[@]}" "$torch2_venv/bin/pip" install -q --disable-pip-version-check "${torch2_pins[@]}"
fi
