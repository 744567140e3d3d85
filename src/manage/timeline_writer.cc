#include "manage/timeline_writer.h"

#include "plan/tag_text.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

namespace sentinel::manage {
namespace {

std::string hex_tag(uint64_t tag) { return "\"" + format_tag(tag) + "\""; }

void list(std::ostream& out, const char* name, const std::vector<uint64_t>& tags) {
  out << ",\"" << name << "\":[";
  for (size_t i = 0; i < tags.size(); ++i) out << (i ? "," : "") << hex_tag(tags[i]);
  out << "]";
}

}  // namespace

void TimelineWriter::header(uint32_t period, const std::string& policy, uint64_t budget_bytes) {
  *out_ << "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1,\"period\":" << period
        << ",\"policy\":\"" << policy << "\",\"budget_bytes\":" << budget_bytes << "}\n";
}

void TimelineWriter::on_step_begin(int64_t step, bool managed) {
  recording_step_ = -1;
  if (!managed || steps_written_ >= max_steps_) return;
  recording_step_ = step;
  ++steps_written_;
  *out_ << "{\"type\":\"step\",\"step\":" << step << ",\"t_ns\":" << now() << "}\n";
}

void TimelineWriter::on_phase_begin(int64_t step, uint32_t phase) {
  if (!recording(step) || executor_ == nullptr) return;
  std::vector<uint64_t> fast, slow, moving;
  executor_->for_each_live([&](ObjectRef, uint64_t tag, uint64_t, Tier tier, bool is_moving) {
    (is_moving ? moving : tier == Tier::kFast ? fast : slow).push_back(tag);
  });
  *out_ << "{\"type\":\"phase\",\"step\":" << step << ",\"phase\":" << phase << ",\"t_ns\":" << now();
  list(*out_, "fast", fast);
  list(*out_, "slow", slow);
  list(*out_, "moving", moving);
  *out_ << "}\n";
}

void TimelineWriter::on_move_issued(int64_t step, uint32_t phase, uint64_t tag, Tier to) {
  if (!recording(step)) return;
  *out_ << "{\"type\":\"move\",\"step\":" << step << ",\"phase\":" << phase << ",\"t_ns\":" << now()
        << ",\"tag\":" << hex_tag(tag) << ",\"to\":\"" << tier_name(to) << "\",\"what\":\"issued\"}\n";
}

void TimelineWriter::on_move_finished(int64_t step, uint32_t phase, uint64_t tag, Tier to, bool moved) {
  if (!recording(step)) return;
  *out_ << "{\"type\":\"move\",\"step\":" << step << ",\"phase\":" << phase << ",\"t_ns\":" << now()
        << ",\"tag\":" << hex_tag(tag) << ",\"to\":\"" << tier_name(to) << "\",\"what\":\""
        << (moved ? "done" : "failed") << "\"}\n";
}

void TimelineWriter::on_deviation(int64_t step, uint32_t event) {
  if (!recording(step)) return;
  *out_ << "{\"type\":\"deviation\",\"step\":" << step << ",\"event\":" << event << "}\n";
}

}  // namespace sentinel::manage
