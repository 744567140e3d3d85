// `sentinel topology`: prints every NUMA node (size, free, CPUs, distances, tier, HMAT) and which
// node is taken as fast and as slow, and why. Reads SENTINEL_FAST_NODE / SENTINEL_SLOW_NODE /
// SENTINEL_SYSFS_ROOT like the runtime does; flags override them.
//
// Thread safety: not reentrant-sensitive; writes to stdout/stderr. Returns the process exit status:
// 0 ok, 1 detection failed (e.g. invalid override), 2 usage error.
#pragma once

namespace sentinel::cli {

int topology_main(int argc, char** argv);

}  // namespace sentinel::cli
