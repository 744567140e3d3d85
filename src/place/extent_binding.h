// Binding an extent's address range to a NUMA node, and asking the kernel where pages are.
//
// Thin wrappers over the raw mbind, get_mempolicy and move_pages system calls (no libnuma: its
// constructor allocates, and these run inside malloc). Nothing here allocates, takes a lock or keeps
// state; every function is safe to call from any thread, including from inside malloc/free.
//
// Errors are reported as a static description (`why`, never freed) plus the errno value, because
// the callers cannot build strings on the allocation path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sentinel::place {

// The policy an extent gets. kPreferred: pages fault in on the node while it has free memory and
// fall back to other nodes when it is full (the program keeps running; see docs/placement.md).
// kBind: pages may only come from the node; when it is full the kernel's OOM handling starts.
enum class BindMode : uint8_t { kPreferred, kBind };

// Largest node id the wrappers accept (the mask lives on the stack).
inline constexpr int kMaxNodeId = 1023;

const char* bind_mode_name(BindMode m) noexcept;

// Sets the memory policy of [addr, addr+len) to `node` (addr page-aligned). Pages already present
// stay where they are unless `move_present` (MPOL_MF_MOVE: the kernel migrates them now, in the
// calling thread). Returns false with *why and *err (errno) when the kernel refuses (no such node,
// node without memory, too many mappings, ...).
bool bind_range(void* addr, size_t len, int node, BindMode mode, bool move_present, std::string_view* why,
                int* err) noexcept;

// Gives a recycled extent a new node: its old pages are dropped (MADV_DONTNEED; the contents of a
// recycled extent are dead) and the policy is set, so the next object's pages fault in, zeroed, on
// `node`. Cheaper than migrating contents nobody will read. After success the range reads as zeros.
bool rebind_discarding(void* addr, size_t len, int node, BindMode mode, std::string_view* why,
                       int* err) noexcept;

// The policy the kernel holds for the page at addr: *mode is MPOL_DEFAULT/PREFERRED/BIND/...,
// *node the lowest node in the policy's mask (-1 when the mask is empty). Does not fault pages in.
bool query_policy(const void* addr, int* mode, int* node) noexcept;

// Nodes of the pages of [addr, addr+len) via move_pages in query mode, written to out[0..pages):
// a node id, or a negative errno for a page that is not present (-ENOENT) or not mapped (-EFAULT).
// Returns false if the system call itself failed. Works in chunks on the stack.
bool page_nodes(const void* addr, size_t len, int* out, size_t out_capacity) noexcept;

// Page counts of [addr, addr+len) per node 0..max_node (counts[0..max_node]); pages not present
// are counted in *absent. Returns false if move_pages failed.
bool count_pages(const void* addr, size_t len, uint64_t* counts, int max_node, uint64_t* absent) noexcept;

}  // namespace sentinel::place
