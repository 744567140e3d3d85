// A model of a core's hardware stream prefetcher: it decides which cache misses are part of a
// sequential stream, and so would have been prefetched ahead of use. The virtual clock charges a
// streamed miss at the node's bandwidth only (its latency overlaps with the core's work, as a real
// L2 streamer makes it), while an isolated miss pays latency / mlp.
//
// Like the L2 streamers of current x86 cores it works on physical addresses (here: line numbers in
// the plugin's RAM address space) and never follows a stream across a 4 KiB page, because the next
// physical page of a virtually contiguous buffer is anywhere. A stream is a run of misses, each within
// `window` lines after (or before, for a descending stream) the previous one in the same page; its
// first `train` misses are not streamed: a prefetcher has to see the direction before it runs ahead.
// So a copy of a 4 KiB page costs two latency-bound misses per stream and 62 at bandwidth.
//
// `trackers` streams are followed at once (least recently used replaced): 16 covers a copy's source
// and destination, a GEMM's operand panels, an element-wise kernel's three tensors.
//
// Thread safety: none; each vCPU owns one. Invariant: a tracker's last line is the last miss it took.
#pragma once

#include <cstdint>
#include <vector>

namespace sentinel::slowtier {

struct StreamParams {
  uint32_t trackers = 16;  // 0: no stream model (every miss is charged latency / mlp)
  uint32_t train = 2;   // misses of a stream before its misses count as streamed
  uint32_t window = 4;  // lines a miss may skip ahead of the last one and still continue the stream
};

class StreamDetector {
 public:
  explicit StreamDetector(const StreamParams& p = StreamParams{});

  // One miss to `line` (address >> 6). Returns true when the miss continues a stream that has trained.
  bool on_miss(uint64_t line);

  static constexpr uint32_t kLinesPerPage = 64;  // 4 KiB of 64-byte lines

 private:
  struct Tracker {
    uint64_t last = 0;
    int32_t direction = 0;  // +1 ascending, -1 descending, 0 unknown (one miss seen)
    uint32_t misses = 0;    // misses in this stream so far; 0: empty tracker
    uint64_t used = 0;      // LRU stamp
  };

  StreamParams params_;
  std::vector<Tracker> trackers_;
  uint64_t clock_ = 0;
};

}  // namespace sentinel::slowtier
