#include "core/status.h"

#include "core/text_buf.h"

namespace sentinel {

Status& Status::append(const char* text) noexcept {
  if (!failed_) return *this;
  if (text_[0] == '\0') {
    TextBuf t(text_, sizeof text_);
    t.put(static_text_).put(text);
    truncated_ = t.truncated();
  } else {
    TextBuf t = TextBuf::continuing(text_, sizeof text_);
    t.put(text);
    truncated_ = truncated_ || t.truncated();
  }
  return *this;
}

Status& Status::append(unsigned long long value) noexcept {
  char digits[24];
  TextBuf t(digits, sizeof digits);
  t.put(static_cast<uint64_t>(value));
  return append(digits);
}

}  // namespace sentinel
