// Small readers for the sysfs files that describe NUMA nodes. Every path is relative to a root
// directory ("/sys" on a real system) so tests can point the readers at a fake tree.
//
// Thread safety: free functions without shared state; safe from any thread (they allocate, so not
// from inside an allocator hook).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sentinel::topo {

// Whole file contents with trailing whitespace removed; nullopt if it cannot be read.
std::optional<std::string> read_text(const std::string& path);

// A decimal unsigned integer file ("300\n"); nullopt if missing or not a number.
std::optional<uint64_t> read_u64(const std::string& path);

// Parses a kernel list such as "0-3,8,10-11" into sorted ids. An empty string is an empty list.
// Returns false (and leaves *out empty) on malformed input.
bool parse_id_list(const std::string& text, std::vector<int>* out);

// Formats sorted ids back into the kernel's range form ("0-3,8").
std::string format_id_list(const std::vector<int>& ids);

// Reads "Node N MemTotal:  123 kB" style lines of nodeN/meminfo: value of `key` in bytes.
std::optional<uint64_t> meminfo_bytes(const std::string& meminfo_text, const std::string& key);

// Entries of a directory (names only, no "." or ".."); empty if it cannot be opened.
std::vector<std::string> list_dir(const std::string& path);

}  // namespace sentinel::topo
