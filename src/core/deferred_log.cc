#include "core/deferred_log.h"

namespace sentinel {

void DeferredLog::push(LogLevel level, const char* text) noexcept {
  SpinGuard guard(lock_);
  if (count_ == kCapacity) {
    ++dropped_;
    return;
  }
  Message& m = ring_[(head_ + count_) % kCapacity];
  m.level = level;
  uint32_t i = 0;
  for (; text[i] != '\0' && i + 1 < kMessageBytes; ++i) m.text[i] = text[i];
  m.text[i] = '\0';
  ++count_;
}

}  // namespace sentinel
