// A program's large allocations and frees played into a StepDetector, for the detector's tests.
//
// Thread safety: none (one test thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/step_detector.h"

namespace sentinel {

// Plays a program's large allocations and frees into a detector, keeping live counts as the runtime
// does, and records which events began a step.
class Program {
 public:
  Program() : d_(std::make_unique<StepDetector>()) {}
  // small_before: allocations below the object threshold since the previous object (the work between).
  uint64_t alloc(uint64_t site, uint64_t size, uint32_t small_before = 0) {
    const bool boundary = d_->observe(site, static_cast<uint32_t>(live_.size()), live_bytes_, size, small_before);
    if (boundary) boundaries_.push_back(events_);
    ++events_;
    const uint64_t id = next_id_++;
    live_[id] = size;
    live_bytes_ += size;
    return id;
  }
  void free(uint64_t id) {
    live_bytes_ -= live_[id];
    live_.erase(id);
  }
  StepDetector& detector() { return *d_; }
  const std::vector<uint64_t>& boundaries() const { return boundaries_; }
  uint64_t events() const { return events_; }

 private:
  std::unique_ptr<StepDetector> d_;
  std::map<uint64_t, uint64_t> live_;
  uint64_t live_bytes_ = 0;
  uint64_t next_id_ = 1;
  uint64_t events_ = 0;
  std::vector<uint64_t> boundaries_;
};

}  // namespace sentinel
