// Byte counts for people: "0 B", "512 B", "1.5 KiB", "130.4 MiB", "2.0 GiB" (powers of 1024). Used by
// everything that prints sizes (the stats summary, the status line, the report).
//
// Thread safety: pure function. Allocates: not for the allocation path.
#pragma once

#include <string>

namespace sentinel {

std::string human_bytes(double bytes);

}  // namespace sentinel
