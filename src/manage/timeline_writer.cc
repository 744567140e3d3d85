#include "manage/timeline_writer.h"

#include <array>
#include <vector>

namespace sentinel::manage {
namespace {

// `"0x` + 16 hex digits + `"`, the tag text of plan/tag_text.h, without a std::string per tag.
void put_tag(std::ostream& out, uint64_t tag) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::array<char, 20> text;
  text[0] = '"';
  text[1] = '0';
  text[2] = 'x';
  for (int i = 0; i < 16; ++i) text[3 + i] = kDigits[(tag >> (60 - 4 * i)) & 0xf];
  text[19] = '"';
  out.write(text.data(), text.size());
}

void list(std::ostream& out, const char* name, const std::vector<uint64_t>& tags) {
  out << ",\"" << name << "\":[";
  for (size_t i = 0; i < tags.size(); ++i) {
    if (i != 0) out.put(',');
    put_tag(out, tags[i]);
  }
  out.put(']');
}

}  // namespace

void TimelineWriter::header(uint32_t period, const std::string& policy, uint64_t budget_bytes) {
  *out_ << "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":2,\"period\":" << period
        << ",\"policy\":\"" << policy << "\",\"budget_bytes\":" << budget_bytes << "}\n";
}

void TimelineWriter::on_step_begin(int64_t step, bool managed) {
  recording_step_ = -1;
  written_.clear();
  pending_.clear();
  key_frame_written_ = false;
  if (!managed || steps_written_ >= max_steps_) return;
  recording_step_ = step;
  ++steps_written_;
  *out_ << "{\"type\":\"step\",\"step\":" << step << ",\"t_ns\":" << now() << "}\n";
}

void TimelineWriter::on_object_changed(ObjectRef ref, uint64_t tag, bool live, Tier tier, bool moving) {
  if (recording_step_ < 0) return;
  const State state = !live ? State::kGone : moving ? State::kMoving : tier == Tier::kFast ? State::kFast : State::kSlow;
  pending_[ref.key()] = Entry{tag, state};
}

void TimelineWriter::on_phase_begin(int64_t step, uint32_t phase) {
  if (!recording(step) || executor_ == nullptr) return;
  if (key_frame_written_) {
    write_delta(step, phase);
  } else {
    write_key_frame(step, phase);
    key_frame_written_ = true;
  }
  pending_.clear();
}

void TimelineWriter::write_key_frame(int64_t step, uint32_t phase) {
  std::vector<uint64_t> fast, slow, moving;
  executor_->for_each_live([&](ObjectRef ref, uint64_t tag, uint64_t, Tier tier, bool is_moving) {
    const State state = is_moving ? State::kMoving : tier == Tier::kFast ? State::kFast : State::kSlow;
    (state == State::kMoving ? moving : state == State::kFast ? fast : slow).push_back(tag);
    written_[ref.key()] = Entry{tag, state};
  });
  *out_ << "{\"type\":\"phase\",\"step\":" << step << ",\"phase\":" << phase << ",\"t_ns\":" << now();
  list(*out_, "fast", fast);
  list(*out_, "slow", slow);
  list(*out_, "moving", moving);
  *out_ << "}\n";
}

void TimelineWriter::write_delta(int64_t step, uint32_t phase) {
  // Indexed by State: [kGone] stays empty.
  std::vector<uint64_t> joined[4], left[4];
  for (const auto& [key, now] : pending_) {
    auto was = written_.find(key);
    if (was != written_.end()) {
      if (was->second.tag == now.tag && was->second.state == now.state) continue;  // changed and back
      left[static_cast<int>(was->second.state)].push_back(was->second.tag);
    } else if (now.state == State::kGone) {
      continue;  // born and freed between two records
    }
    if (now.state == State::kGone) {
      written_.erase(was);
      continue;
    }
    joined[static_cast<int>(now.state)].push_back(now.tag);
    written_[key] = now;
  }
  *out_ << "{\"type\":\"phase\",\"step\":" << step << ",\"phase\":" << phase << ",\"t_ns\":" << now()
        << ",\"delta\":true";
  static constexpr const char* kJoined[4] = {nullptr, "fast", "slow", "moving"};
  static constexpr const char* kLeft[4] = {nullptr, "left_fast", "left_slow", "left_moving"};
  for (int s = 1; s < 4; ++s) {
    if (!left[s].empty()) list(*out_, kLeft[s], left[s]);
  }
  for (int s = 1; s < 4; ++s) {
    if (!joined[s].empty()) list(*out_, kJoined[s], joined[s]);
  }
  *out_ << "}\n";
}

void TimelineWriter::on_move_issued(int64_t step, uint32_t phase, uint64_t tag, Tier to) {
  if (!recording(step)) return;
  *out_ << "{\"type\":\"move\",\"step\":" << step << ",\"phase\":" << phase << ",\"t_ns\":" << now() << ",\"tag\":";
  put_tag(*out_, tag);
  *out_ << ",\"to\":\"" << tier_name(to) << "\",\"what\":\"issued\"}\n";
}

void TimelineWriter::on_move_finished(int64_t step, uint32_t phase, uint64_t tag, Tier to, bool moved) {
  if (!recording(step)) return;
  *out_ << "{\"type\":\"move\",\"step\":" << step << ",\"phase\":" << phase << ",\"t_ns\":" << now() << ",\"tag\":";
  put_tag(*out_, tag);
  *out_ << ",\"to\":\"" << tier_name(to) << "\",\"what\":\"" << (moved ? "done" : "failed") << "\"}\n";
}

void TimelineWriter::on_deviation(int64_t step, uint32_t event) {
  if (!recording(step)) return;
  *out_ << "{\"type\":\"deviation\",\"step\":" << step << ",\"event\":" << event << "}\n";
}

}  // namespace sentinel::manage
