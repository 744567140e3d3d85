// `sentinel run`'s live status line on a terminal: the status the runtime publishes (core/live_status.h)
// drawn on the terminal's last row, below a scroll region that keeps the program's own output above it,
// and removed at exit. Only used when stderr is a terminal; on a pipe nothing extra is printed.
//
// Thread safety: one StatusLine, used by the thread that waits for the program.
#pragma once

#include <cstddef>
#include <string>

#include "core/live_status.h"

namespace sentinel::cli {

// "sentinel: managed, managed | step 12 | DRAM 24.8 MiB of 25.0 MiB | 34 migrations (1.2 GiB) | 0 late",
// cut to `width` columns.
std::string format_status_line(const LiveStatus& s, size_t width);

class StatusLine {
 public:
  // fd: the terminal (stderr). Reserves the last row.
  explicit StatusLine(int fd);
  ~StatusLine();  // erases the line and gives the row back
  void draw(const LiveStatus& s);

 private:
  void write_text(const std::string& text);
  int fd_;
  int rows_ = 0, cols_ = 0;
  bool drawn_ = false;
};

}  // namespace sentinel::cli
