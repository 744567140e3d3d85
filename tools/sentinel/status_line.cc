#include "status_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

#include "core/human_bytes.h"

namespace sentinel::cli {

std::string format_status_line(const LiveStatus& s, size_t width) {
  std::string line = std::string("sentinel: ") + s.mode + ", " + s.stage + " | step " + std::to_string(s.steps);
  line += " | DRAM " + human_bytes(s.dram_bytes);
  if (s.budget_bytes > 0) line += " of " + human_bytes(s.budget_bytes);
  line += " | " + std::to_string(s.migrations) + " migrations";
  if (s.migrated_bytes > 0) line += " (" + human_bytes(s.migrated_bytes) + ")";
  if (s.managed_steps > 0)
    line += " | " + std::to_string(s.managed_steps) + " managed, " + std::to_string(s.late_prefetches) + " late";
  if (width > 0 && line.size() > width) line.resize(width);
  return line;
}

StatusLine::StatusLine(int fd) : fd_(fd) {
  struct winsize ws {};
  if (::ioctl(fd_, TIOCGWINSZ, &ws) == 0) {
    rows_ = ws.ws_row;
    cols_ = ws.ws_col;
  }
  if (rows_ < 3) return;
  // A new line to stand on, then the scroll region rows 1..rows-1 (the cursor stays where it was).
  char seq[64];
  std::snprintf(seq, sizeof seq, "\n\0337\033[1;%dr\0338\033[1A", rows_ - 1);
  write_text(seq);
}

StatusLine::~StatusLine() {
  if (rows_ < 3) return;
  char seq[64];
  // Clear the last row, give it back to the scroll region, and put the cursor back.
  std::snprintf(seq, sizeof seq, "\0337\033[%d;1H\033[2K\033[r\0338", rows_);
  write_text(seq);
}

void StatusLine::draw(const LiveStatus& s) {
  if (rows_ < 3) return;
  char seq[32];
  std::snprintf(seq, sizeof seq, "\0337\033[%d;1H\033[2K", rows_);
  write_text(seq + format_status_line(s, cols_ > 1 ? static_cast<size_t>(cols_ - 1) : 0) + "\0338");
  drawn_ = true;
}

void StatusLine::write_text(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace sentinel::cli
