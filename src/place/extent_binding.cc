#include "place/extent_binding.h"

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "os/os.h"

namespace sentinel::place {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kMaskWords = (kMaxNodeId + 1) / (8 * sizeof(unsigned long));
// The kernel treats maxnode as "bits + 1" (it drops the last bit), as libnuma does.
constexpr unsigned long kMaxNodeArg = kMaskWords * 8 * sizeof(unsigned long) + 1;
constexpr size_t kQueryChunk = 256;  // pages per move_pages call (stack arrays)

bool valid_node(int node) { return node >= 0 && node <= kMaxNodeId; }

const char* mbind_reason(int err) {
  switch (err) {
    case EINVAL: return "mbind: invalid node or range (node does not exist or has no memory?)";
    case EFAULT: return "mbind: range not mapped";
    case ENOMEM: return "mbind: out of kernel memory or too many mappings (vm.max_map_count)";
    case EIO: return "mbind: present pages could not be moved";
    case EPERM: return "mbind: not permitted";
    default: return "mbind failed";
  }
}

}  // namespace

const char* bind_mode_name(BindMode m) noexcept { return m == BindMode::kBind ? "bind" : "preferred"; }

bool bind_range(void* addr, size_t len, int node, BindMode mode, bool move_present, std::string_view* why,
                int* err) noexcept {
  if (!valid_node(node)) {
    if (why != nullptr) *why = "node id out of range";
    if (err != nullptr) *err = EINVAL;
    return false;
  }
  if ((reinterpret_cast<uintptr_t>(addr) & (kPage - 1)) != 0 || len == 0) {
    if (why != nullptr) *why = "range not page-aligned or empty";
    if (err != nullptr) *err = EINVAL;
    return false;
  }
  unsigned long mask[kMaskWords] = {};
  mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
  const int policy = mode == BindMode::kBind ? MPOL_BIND : MPOL_PREFERRED;
  const unsigned flags = move_present ? MPOL_MF_MOVE : 0;
  if (os::mbind(addr, len, policy, mask, kMaxNodeArg, flags) != 0) {
    const int e = errno;
    if (why != nullptr) *why = mbind_reason(e);
    if (err != nullptr) *err = e;
    return false;
  }
  return true;
}

bool rebind_discarding(void* addr, size_t len, int node, BindMode mode, std::string_view* why,
                       int* err) noexcept {
  if (os::madvise(addr, len, MADV_DONTNEED) != 0) {
    if (why != nullptr) *why = "madvise(MADV_DONTNEED) failed";
    if (err != nullptr) *err = errno;
    return false;
  }
  return bind_range(addr, len, node, mode, false, why, err);
}

bool query_policy(const void* addr, int* mode, int* node) noexcept {
  unsigned long mask[kMaskWords] = {};
  int m = -1;
  if (os::get_mempolicy(&m, mask, kMaxNodeArg, addr, MPOL_F_ADDR) != 0) return false;
  if (mode != nullptr) *mode = m;
  if (node != nullptr) {
    *node = -1;
    for (size_t w = 0; w < kMaskWords && *node < 0; ++w) {
      if (mask[w] != 0) *node = static_cast<int>(w * 8 * sizeof(unsigned long)) + __builtin_ctzl(mask[w]);
    }
  }
  return true;
}

bool page_nodes(const void* addr, size_t len, int* out, size_t out_capacity) noexcept {
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~(kPage - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + len;
  size_t n = 0;
  void* pages[kQueryChunk];
  for (uintptr_t a = start; a < end && n < out_capacity;) {
    size_t k = 0;
    while (k < kQueryChunk && a < end && n + k < out_capacity) {
      pages[k++] = reinterpret_cast<void*>(a);
      a += kPage;
    }
    if (os::move_pages(0, k, pages, nullptr, out + n, 0) != 0) return false;
    n += k;
  }
  return true;
}

bool count_pages(const void* addr, size_t len, uint64_t* counts, int max_node, uint64_t* absent) noexcept {
  int status[kQueryChunk];
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~(kPage - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + len;
  for (int i = 0; i <= max_node; ++i) counts[i] = 0;
  if (absent != nullptr) *absent = 0;
  for (uintptr_t a = start; a < end; a += kQueryChunk * kPage) {
    const size_t chunk_len = end - a < kQueryChunk * kPage ? end - a : kQueryChunk * kPage;
    const size_t pages = (chunk_len + kPage - 1) / kPage;
    if (!page_nodes(reinterpret_cast<const void*>(a), chunk_len, status, kQueryChunk)) return false;
    for (size_t i = 0; i < pages; ++i) {
      if (status[i] >= 0 && status[i] <= max_node) {
        ++counts[status[i]];
      } else if (absent != nullptr) {
        ++*absent;
      }
    }
  }
  return true;
}

}  // namespace sentinel::place
