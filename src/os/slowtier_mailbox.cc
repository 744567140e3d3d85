#include "os/slowtier_mailbox.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace sentinel::slowtier {
namespace {

std::atomic<uint64_t> g_seq{0};

}  // namespace

uint64_t fresh_request_seq() noexcept {
  return (static_cast<uint64_t>(getpid()) << 40) ^ (g_seq.fetch_add(1, std::memory_order_relaxed) + 1);
}

// The marker and the store must be adjacent instructions in one translation block: one asm
// statement keeps them adjacent, and a function of its own aligned to 64 bytes keeps them at the
// start of a block (a call ends the caller's block) and off any page boundary, where TCG would
// end the block between them.
__attribute__((noinline, aligned(64))) void marked_store(volatile uint64_t* slot, uint64_t value) noexcept {
  asm volatile(
      ".byte 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x53, 0x4e, 0x54, 0x4c\n\t"
      "movq %1, (%0)"
      :
      : "r"(slot), "r"(value)
      : "memory");
}

bool read_with_page(void* page, sentinel_slowtier_counters* out, int attempts) noexcept {
  auto* box = static_cast<Mailbox*>(page);
  std::memcpy(box->cookie, kMailboxCookie, sizeof kMailboxCookie);
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const uint64_t seq = fresh_request_seq();
    __atomic_store_n(&box->response_seq, 0, __ATOMIC_RELAXED);
    marked_store(&box->request_seq, seq);
    if (__atomic_load_n(&box->response_seq, __ATOMIC_ACQUIRE) == seq) {
      std::memcpy(out, &box->counters, sizeof *out);
      return true;
    }
  }
  return false;
}

}  // namespace sentinel::slowtier
