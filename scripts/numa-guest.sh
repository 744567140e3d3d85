#!/usr/bin/env bash
# numa-guest.sh COMMAND [ARGS...]
#
# Runs COMMAND inside a two-node NUMA guest (QEMU, TCG) and returns its exit status and output.
# Node 0 has the CPUs and memory; node 1 has memory and no CPUs, like a CXL or PMem expander. With
# SENTINEL_GUEST_NODE1=kmem node 1's memory is an emulated NVDIMM onlined through the dax kmem driver,
# so the kernel puts it in a lower memory tier (demotion, NUMA balancing in tiering mode).
# The host's root file system is shared read-only (virtfs) and the guest chroots into it, so host
# binaries, libraries and the build tree run unchanged. A tmpfs overlay on top makes the guest's
# root writable; writes are thrown away when the guest stops (see SENTINEL_GUEST_RW to keep them).
#
# Exit status: COMMAND's, or 124 when the timeout hit, or 125 when the guest failed to boot or to
# run the command. See docs/numa-guest.md for the environment variables and how it works.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: numa-guest.sh [--prepare] COMMAND [ARGS...]

Runs COMMAND in a two-node QEMU guest (node 1: memory, no CPUs) chrooted into the host's root.
  --prepare   only download the kernel and build the initramfs into the cache, then exit
Environment:
  SENTINEL_GUEST_CACHE     cache dir (default ~/.cache/sentinel-guest)
  SENTINEL_GUEST_TIMEOUT   seconds before the guest is killed (default 900); exit status 124
  SENTINEL_GUEST_NODE0_MB  memory of node 0 in MiB (default 2048)
  SENTINEL_GUEST_NODE1_MB  memory of node 1 in MiB (default 2048; with kmem a multiple of 128)
  SENTINEL_GUEST_NODE1     plain|kmem: node 1 as boot RAM in node 0's memory tier (plain, default), or
                           an NVDIMM onlined as system RAM by the dax kmem driver in a lower tier (kmem)
  SENTINEL_GUEST_CPUS      CPUs, all on node 0 (default 2)
  SENTINEL_GUEST_DISTANCE  SLIT distance node 0 <-> node 1 (default 30)
  SENTINEL_GUEST_HMAT      1: describe node 1 as slower in ACPI HMAT (default 1)
  SENTINEL_GUEST_KERNEL_ARGS  more guest kernel arguments (default with the slow tier on: nohz_full=N,
                           N the last CPU, so that a thread pinned there is not ticked at the host's
                           rate; docs/slow-tier-emulator.md; set it to " " for none)
  SENTINEL_GUEST_RW        host dir shared writable at the same path in the guest (optional)
  SENTINEL_GUEST_PASS_ENV  extra variable names to pass into the guest (space separated)
  SENTINEL_GUEST_KERNEL_PKG  Debian kernel package to use (default: what linux-image-amd64 names)
  SENTINEL_GUEST_VERBOSE   1: print the guest's console log afterwards
  SENTINEL_GUEST_SLOW_TIER off|optane|cxl|dram|optane-2m|cxl-2m|FILE: load the slow-tier QEMU plugin,
                           which counts misses per node and keeps a virtual clock (default off;
                           docs/slow-tier-emulator.md)
  SENTINEL_GUEST_SLOW_TIER_STATS  host path of the plugin's JSON counters, written when the guest stops
  SENTINEL_GUEST_SLOW_TIER_OPTS   more plugin keys, comma separated (e.g. cpi=0.8,cache_kb=4096)
  SENTINEL_BUILD_DIR       build tree holding the plugin and sentinel-slowtier (default: ./build of the repo)
Passed through: PWD (working dir), PATH, HOME, LANG, LC_*, TZ, LD_PRELOAD, LD_LIBRARY_PATH,
PYTHONPATH, OMP_NUM_THREADS, SENTINEL_*, MEMKIND_*, GTEST_*. Inside, SENTINEL_IN_GUEST=1.
EOF
}

die() { echo "numa-guest: $*" >&2; exit 125; }
log() { echo "numa-guest: $*" >&2; }

prepare_only=0
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --prepare) prepare_only=1; shift ;;
  "") usage >&2; exit 2 ;;
esac

cache="${SENTINEL_GUEST_CACHE:-${HOME:-/root}/.cache/sentinel-guest}"
timeout_s="${SENTINEL_GUEST_TIMEOUT:-900}"
node0_mb="${SENTINEL_GUEST_NODE0_MB:-2048}"
node1_mb="${SENTINEL_GUEST_NODE1_MB:-2048}"
node1_kind="${SENTINEL_GUEST_NODE1:-plain}"
cpus="${SENTINEL_GUEST_CPUS:-2}"
distance="${SENTINEL_GUEST_DISTANCE:-30}"
hmat="${SENTINEL_GUEST_HMAT:-1}"
slow_tier="${SENTINEL_GUEST_SLOW_TIER:-off}"
slow_stats="${SENTINEL_GUEST_SLOW_TIER_STATS:-}"
slow_opts="${SENTINEL_GUEST_SLOW_TIER_OPTS:-}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${SENTINEL_BUILD_DIR:-$root/build}"
for v in timeout_s node0_mb node1_mb cpus distance; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
done
(( node0_mb >= 256 )) || die "SENTINEL_GUEST_NODE0_MB must be at least 256"
(( node1_mb >= 64 )) || die "SENTINEL_GUEST_NODE1_MB must be at least 64"
(( cpus >= 1 )) || die "SENTINEL_GUEST_CPUS must be at least 1"
case "$node1_kind" in
  plain) ;;
  kmem) (( node1_mb % 128 == 0 )) || die "SENTINEL_GUEST_NODE1_MB must be a multiple of 128 with SENTINEL_GUEST_NODE1=kmem (memory blocks), got $node1_mb" ;;
  *) die "SENTINEL_GUEST_NODE1: '$node1_kind' is neither plain nor kmem" ;;
esac
# kmem: the NVDIMM is one memory block (128 MiB) larger than node 1, because the dax kmem driver onlines
# whole blocks and the device's first block holds the devdax info block (docs/numa-guest.md).
nvdimm_mb=$((node1_mb + 128))
case "$slow_tier" in
  off) ;;
  optane|cxl|dram|optane-2m|cxl-2m) ;;
  *) [[ -f "$slow_tier" ]] || die "SENTINEL_GUEST_SLOW_TIER: '$slow_tier' is neither off, a preset (optane, cxl, dram, optane-2m, cxl-2m) nor a file"
     slow_tier="$(cd "$(dirname "$slow_tier")" && pwd -P)/$(basename "$slow_tier")" ;;
esac
kernel_args="${SENTINEL_GUEST_KERNEL_ARGS-}"
if [[ "$slow_tier" != off ]]; then
  (( cpus > 1 )) && kernel_args="${SENTINEL_GUEST_KERNEL_ARGS-nohz_full=$((cpus - 1))}"
  slow_plugin="$build_dir/lib/libsentinel_qemu_slowtier.so"
  slow_tool="$build_dir/bin/sentinel-slowtier"
  [[ -f "$slow_plugin" && -x "$slow_tool" ]] || die "slow tier: $slow_plugin or $slow_tool missing (build first; SENTINEL_BUILD_DIR)"
  [[ -z "$slow_opts" || "$slow_opts" =~ ^[a-z0-9_]+=[^,]+(,[a-z0-9_]+=[^,]+)*$ ]] || die "SENTINEL_GUEST_SLOW_TIER_OPTS: expected key=value,key=value, got '$slow_opts'"
  if [[ -n "$slow_stats" ]]; then
    slow_stats="$(cd "$(dirname "$slow_stats")" 2>/dev/null && pwd -P)/$(basename "$slow_stats")" || die "SENTINEL_GUEST_SLOW_TIER_STATS: no directory for $slow_stats"
    rm -f "$slow_stats"
  fi
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (scripts/install-deps.sh)"
busybox_bin="$(command -v busybox || true)"
[[ -n "$busybox_bin" ]] || die "busybox missing (busybox-static)"
# The initramfs has no libc: busybox must be the static build (ldd fails on static binaries).
if ldd "$busybox_bin" >/dev/null 2>&1; then die "$busybox_bin is dynamically linked: install busybox-static"; fi

# The modules the initramfs needs, in load order (each one depends only on those before it).
modules=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
         netfs fscache 9pnet 9pnet_virtio 9p overlay)
# Loaded only with SENTINEL_GUEST_NODE1=kmem: the ACPI NFIT NVDIMM bus, the pmem and devdax namespace
# drivers, and the dax kmem driver that onlines a dax device as system RAM.
kmem_modules=(libnvdimm nfit nd_btt nd_pmem device_dax dax_pmem kmem)
# Bump when the init script or the module lists change: it names the cached initramfs.
initramfs_version=4

mkdir -p "$cache"
exec 9>"$cache/.lock"

# --- kernel: the Debian package, unpacked; only vmlinuz and the modules above are kept -----------
pick_kernel_pkg() {
  if [[ -n "${SENTINEL_GUEST_KERNEL_PKG:-}" ]]; then echo "$SENTINEL_GUEST_KERNEL_PKG"; return; fi
  local pkg
  pkg="$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-6\.1\.0-[0-9]*-amd64\)$/\1/p' | head -1)"
  if [[ -z "$pkg" ]]; then
    pkg="$(apt-cache pkgnames linux-image-6.1.0- 2>/dev/null | grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -V | tail -1)"
  fi
  echo "$pkg"
}

# A cached kernel is complete when its ok file lists every module of today's lists (a cache made before
# a module was added is extracted again).
kernel_complete() {
  [[ -f "$1/ok" ]] || return 1
  local m
  for m in "${modules[@]}" "${kmem_modules[@]}"; do grep -qx "$m" "$1/ok" || return 1; done
}

prepare_kernel() {
  # Reuse any cached kernel unless a package is named: the guest must work offline once prepared.
  if [[ -z "${SENTINEL_GUEST_KERNEL_PKG:-}" ]]; then
    local have
    have="$(ls -d "$cache"/kernel-*/ 2>/dev/null | sort -V | tail -1 || true)"
    if [[ -n "$have" ]] && kernel_complete "${have%/}"; then kdir="${have%/}"; return; fi
  fi
  local pkg; pkg="$(pick_kernel_pkg)"
  [[ -n "$pkg" ]] || die "cannot find a linux-image-6.1.0-*-amd64 package (run apt-get update)"
  kdir="$cache/kernel-${pkg#linux-image-}"
  kernel_complete "$kdir" && return
  log "downloading $pkg (once; cached in $cache)"
  local tmp; tmp="$(mktemp -d "$cache/dl.XXXXXX")"
  chmod 755 "$tmp"   # apt's _apt user writes the download here
  if ! (cd "$tmp" && apt-get download "$pkg" >"$tmp/apt.log" 2>&1); then
    cat "$tmp/apt.log" >&2; rm -rf "$tmp"; die "apt-get download $pkg failed"
  fi
  dpkg -x "$tmp"/*.deb "$tmp/x" || { rm -rf "$tmp"; die "dpkg -x failed"; }
  # Files are replaced by rename, never removed first: another guest may be booting from this cache
  # (the same package gives the same files, so an older cache only gains modules).
  mkdir -p "$kdir/modules"
  cp "$tmp"/x/boot/vmlinuz-* "$kdir/vmlinuz.tmp" && mv -f "$kdir/vmlinuz.tmp" "$kdir/vmlinuz"
  local m f
  for m in "${modules[@]}" "${kmem_modules[@]}"; do
    f="$(find "$tmp/x/lib/modules" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" | head -1)"
    if [[ -z "$f" ]]; then
      grep -q "/$m.ko\$" "$tmp"/x/lib/modules/*/modules.builtin && continue
      rm -rf "$tmp"; die "module $m not in $pkg"
    fi
    case "$f" in
      *.xz) xz -dc "$f" >"$kdir/modules/$m.ko.tmp" ;;
      *.zst) zstd -dqc "$f" >"$kdir/modules/$m.ko.tmp" ;;
      *) cp "$f" "$kdir/modules/$m.ko.tmp" ;;
    esac
    mv -f "$kdir/modules/$m.ko.tmp" "$kdir/modules/$m.ko"
  done
  rm -rf "$tmp"
  printf '%s\n' "${modules[@]}" "${kmem_modules[@]}" >"$kdir/ok"
}

# --- initramfs: static busybox, the modules, and /init ------------------------------------------
write_init() {
  cat >"$1" <<'EOF'
#!/bin/busybox sh
# Guest init: load the 9p/virtio modules, mount the host root (read-only) under a tmpfs overlay,
# run the command chrooted into it, store the exit status on the run share, power off.
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /lower /rw /mnt /share
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.list); do
  [ -f /modules/$m.ko ] || continue
  insmod /modules/$m.ko || echo "sentinel-guest: insmod $m failed"
done
o=trans=virtio,version=9p2000.L,msize=512000,cache=loose
mount -t 9p -o $o,ro hostroot /lower || { echo "sentinel-guest: cannot mount host root"; poweroff -f; }
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 sentrun /share || \
  { echo "sentinel-guest: cannot mount run share"; poweroff -f; }
# Node 1 as dax kmem memory: the NVDIMM drivers (run.sh makes the namespace and onlines it).
if [ -f /share/node1_kmem ]; then
  for m in $(cat /modules-kmem.list); do
    [ -f /modules/$m.ko ] || continue
    insmod /modules/$m.ko || echo "sentinel-guest: insmod $m failed"
  done
fi
mount -t tmpfs -o mode=755 rw /rw
mkdir -p /rw/upper /rw/work
if ! mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /mnt; then
  echo "sentinel-guest: overlay failed; read-only root with a tmpfs /tmp"
  mount --bind /lower /mnt
  mount -t tmpfs tmp /mnt/tmp
fi
mount -t proc proc /mnt/proc
mount -t sysfs sys /mnt/sys
mount -t devtmpfs dev /mnt/dev
mkdir -p /mnt/dev/pts /mnt/dev/shm
mount -t devpts devpts /mnt/dev/pts
mount -t tmpfs shm /mnt/dev/shm
mount -t tmpfs run /mnt/run
mkdir -p /mnt/run/sentinel-guest
mount --bind /share /mnt/run/sentinel-guest
rwpath=$(cat /share/rw_path 2>/dev/null)
if [ -n "$rwpath" ]; then
  mkdir -p "/mnt$rwpath"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 sentrw "/mnt$rwpath" || \
    echo "sentinel-guest: cannot mount $rwpath writable"
fi
echo "sentinel-guest: running"
chroot /mnt /bin/bash /run/sentinel-guest/run.sh </dev/null \
  >/share/stdout 2>/share/stderr
echo $? >/share/rc.tmp && mv /share/rc.tmp /share/rc
sync
echo "sentinel-guest: done"
poweroff -f
EOF
  chmod 755 "$1"
}

prepare_initramfs() {
  local kver; kver="$(basename "$kdir")"
  initrd="$cache/initramfs-$kver-v$initramfs_version.cpio.gz"
  [[ -f "$initrd" ]] && return
  log "building $initrd"
  local tmp; tmp="$(mktemp -d "$cache/ird.XXXXXX")"
  mkdir -p "$tmp/bin" "$tmp/modules"
  cp "$busybox_bin" "$tmp/bin/busybox"
  cp "$kdir"/modules/*.ko "$tmp/modules/" 2>/dev/null || true
  printf '%s\n' "${modules[@]}" >"$tmp/modules.list"
  printf '%s\n' "${kmem_modules[@]}" >"$tmp/modules-kmem.list"
  write_init "$tmp/init"
  (cd "$tmp" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$initrd.tmp"
  mv "$initrd.tmp" "$initrd"
  rm -rf "$tmp"
}

flock 9
prepare_kernel
prepare_initramfs
flock -u 9
if (( prepare_only )); then log "ready: $kdir/vmlinuz $initrd"; exit 0; fi

# --- the run share: the command script in, stdout/stderr/rc out ---------------------------------
run="$(mktemp -d "${TMPDIR:-/tmp}/sentinel-guest.XXXXXX")"
qpid=""
ram_files=()
cleanup() {
  if [[ -n "$qpid" ]]; then kill "$qpid" 2>/dev/null || true; fi
  rm -rf "$run"
  if (( ${#ram_files[@]} )); then rm -f "${ram_files[@]}"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
  echo '# generated by numa-guest.sh'
  pass=(PATH HOME LANG TZ LD_PRELOAD LD_LIBRARY_PATH PYTHONPATH OMP_NUM_THREADS TERM)
  # shellcheck disable=SC2206
  pass+=(${SENTINEL_GUEST_PASS_ENV:-})
  for name in $(compgen -e); do
    case "$name" in SENTINEL_*|MEMKIND_*|GTEST_*|LC_*) pass+=("$name") ;; esac
  done
  for name in "${pass[@]}"; do
    [[ -n "${!name+x}" ]] && printf 'export %s=%q\n' "$name" "${!name}"
  done
  echo 'export SENTINEL_IN_GUEST=1'
  printf 'export SENTINEL_GUEST_NODE1=%q\n' "$node1_kind"
  if [[ "$node1_kind" == kmem ]]; then
    # Before anything else: the NVDIMM becomes a devdax namespace, onlined as system RAM of node 1.
    printf '%q || exit 125\n' "$root/scripts/numa-guest-kmem.sh"
  fi
  if [[ "$slow_tier" != off ]]; then
    printf 'export SENTINEL_GUEST_SLOW_TIER=%q SENTINEL_GUEST_SLOWTIER_LIB=%q\n' "$slow_tier" "$build_dir/lib/libsentinel_slowtier.so"
    # The plugin's node layout must hold before any figure is trusted (docs/slow-tier-emulator.md).
    printf '%q check || { echo "numa-guest: slow-tier layout check failed" >&2; exit 125; }\n' "$slow_tool"
  fi
  printf 'cd %q || { echo "numa-guest: no directory %s in the guest" >&2; exit 125; }\n' "$PWD" "$PWD"
  printf 'exec'; printf ' %q' "$@"; printf '\n'
} >"$run/run.sh"

machine=pc
if [[ "$node1_kind" == plain ]]; then
  qemu=(qemu-system-x86_64 -accel tcg -cpu max -smp "$cpus" -m "$((node0_mb + node1_mb))M")
  node1_backend_mb=$node1_mb
else
  # Node 1 has no boot memory: its memory is the NVDIMM, in the device-memory area above 4 GiB.
  qemu=(qemu-system-x86_64 -accel tcg -cpu max -smp "$cpus" -m "${node0_mb}M,slots=1,maxmem=$((node0_mb + nvdimm_mb))M")
  machine+=",nvdimm=on"
  node1_backend_mb=$nvdimm_mb
  touch "$run/node1_kmem"
fi
# node 1's memory backend: the id m1 for a plain node, nv1 behind the NVDIMM device for kmem.
node1_backend() {  # node1_backend KIND-AND-FILE-OPTIONS
  if [[ "$node1_kind" == plain ]]; then
    qemu+=(-object "$1,size=${node1_mb}M,id=m1")
  else
    qemu+=(-object "$1,size=${nvdimm_mb}M,id=nv1" -device "nvdimm,id=nvdimm1,memdev=nv1,node=1")
  fi
}
if [[ "$slow_tier" == off ]]; then
  qemu+=(-object "memory-backend-ram,size=${node0_mb}M,id=m0")
  if [[ "$node1_kind" == plain ]]; then node1_backend memory-backend-ram; else
    # An NVDIMM needs a file backend; shared memory like the slow tier's.
    shm="${SENTINEL_GUEST_SHM:-/dev/shm}/sentinel-guest.$$.$RANDOM"
    ram_files=("$shm-nv1")
    truncate -s "${nvdimm_mb}M" "$shm-nv1" || die "cannot create $shm-nv1"
    node1_backend "memory-backend-file,mem-path=$shm-nv1,share=on"
  fi
else
  # The guest RAM lives in shared files that the plugin maps too, so that it can answer mailbox
  # reads by writing into guest memory. No VGA: its video RAM block would land in node 1's range.
  shm="${SENTINEL_GUEST_SHM:-/dev/shm}/sentinel-guest.$$.$RANDOM"
  ram_files=("$shm-m0" "$shm-m1")
  truncate -s "${node0_mb}M" "$shm-m0" && truncate -s "${node1_backend_mb}M" "$shm-m1" || die "cannot create $shm-m0/m1"
  esc() { printf '%s' "${1//,/,,}"; }
  # The plugin's RAM layout (tools/qemu-slowtier/node_map.h): kmem puts the NVDIMM's block right after
  # node 0's; sentinel-slowtier check verifies it at every start.
  plugin_args="file=$(esc "$slow_plugin"),tier=$(esc "$slow_tier"),node0_mb=$node0_mb,node1_mb=$node1_backend_mb"
  plugin_args+=",layout=$node1_kind,node0_file=$(esc "$shm-m0"),node1_file=$(esc "$shm-m1")"
  [[ -n "$slow_stats" ]] && plugin_args+=",stats=$(esc "$slow_stats")"
  [[ -n "$slow_opts" ]] && plugin_args+=",$slow_opts"
  qemu+=(-object "memory-backend-file,size=${node0_mb}M,id=m0,mem-path=$shm-m0,share=on")
  node1_backend "memory-backend-file,mem-path=$shm-m1,share=on"
  qemu+=(-vga none -plugin "$plugin_args")
fi
if [[ "$node1_kind" == plain ]]; then
  qemu+=(-numa "node,nodeid=0,cpus=0-$((cpus - 1)),memdev=m0" -numa "node,nodeid=1,memdev=m1,initiator=0")
else
  qemu+=(-numa "node,nodeid=0,cpus=0-$((cpus - 1)),memdev=m0" -numa "node,nodeid=1,initiator=0")
fi
qemu+=(-numa "dist,src=0,dst=1,val=$distance")
if [[ "$hmat" == 1 ]]; then
  # Node 1 as a far tier: 3x the latency, a quarter of the bandwidth (figures only describe it;
  # under emulation both nodes run at the same speed).
  machine+=",hmat=on"
  qemu+=(
    -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=100
    -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20G
    -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=300
    -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=5G)
fi
[[ "$machine" == pc ]] || qemu+=(-machine "$machine")
qemu+=(-kernel "$kdir/vmlinuz" -initrd "$initrd"
  -append "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init${kernel_args:+ $kernel_args}"
  -display none -monitor none -no-reboot -serial "file:$run/console.log"
  -nic none
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
  -virtfs "local,path=$run,mount_tag=sentrun,security_model=none,multidevs=remap")
if [[ -n "${SENTINEL_GUEST_RW:-}" ]]; then
  rw="$(cd "$SENTINEL_GUEST_RW" && pwd -P)" || die "SENTINEL_GUEST_RW: no directory $SENTINEL_GUEST_RW"
  echo "$rw" >"$run/rw_path"
  qemu+=(-virtfs "local,path=$rw,mount_tag=sentrw,security_model=none,multidevs=remap")
fi

: >"$run/stdout"; : >"$run/stderr"
timeout --kill-after=10 "$timeout_s" "${qemu[@]}" </dev/null >"$run/qemu.log" 2>&1 &
qpid=$!
# Stream the command's output while the guest runs (the guest writes these files through 9p).
tail -q -n +1 -s 0.2 -f --pid="$qpid" "$run/stdout" &
t1=$!
tail -q -n +1 -s 0.2 -f --pid="$qpid" "$run/stderr" >&2 &
t2=$!
qrc=0
wait "$qpid" || qrc=$?
qpid=""
wait "$t1" "$t2" 2>/dev/null || true

if [[ "${SENTINEL_GUEST_VERBOSE:-0}" == 1 ]]; then
  log "console:"; sed 's/\r$//' "$run/console.log" >&2 || true
fi
if [[ -n "$slow_stats" && ! -f "$slow_stats" ]]; then
  log "slow tier: no statistics were written to $slow_stats"
fi
if [[ -f "$run/rc" ]]; then
  exit "$(cat "$run/rc")"
fi
if (( qrc == 124 || qrc == 137 )); then
  log "timed out after ${timeout_s}s (SENTINEL_GUEST_TIMEOUT)"
  exit 124
fi
log "guest failed (qemu status $qrc); qemu and console log:"
cat "$run/qemu.log" >&2 || true
tail -n 40 "$run/console.log" 2>/dev/null | sed 's/\r$//' >&2 || true
exit 125
