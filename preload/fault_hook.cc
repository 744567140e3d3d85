#include "fault_hook.h"

#ifdef SENTINEL_FAULT_INJECTION
#include "core/env.h"
#include "core/text_buf.h"
#include "os/fault_injector.h"
#endif

namespace sentinel::rt {

#ifdef SENTINEL_FAULT_INJECTION

namespace {
void write_line(TextBuf& msg) {
  msg.put("\n");
  write_all(2, msg.c_str(), __builtin_strlen(msg.c_str()));
}
}  // namespace

void fault_injection_start() noexcept {
  const char* spec = env_get("SENTINEL_FAULT_INJECT");
  if (spec == nullptr) return;
  char line[256];
  TextBuf msg(line, sizeof line);
  os::FaultConfig config;
  if (!os::parse_fault_spec(spec, &config)) {
    msg.put("sentinel: SENTINEL_FAULT_INJECT=").put(spec).put(" is not seed:rate[:op,...]; no faults injected");
    write_line(msg);
    return;
  }
  os::start_fault_injection(config);
  msg.put("sentinel: fault injection on (test build): seed ").put(config.seed).put(", ");
  msg.put(static_cast<uint64_t>(config.rate * 1e6 + 0.5)).put(" failures per million calls");
  write_line(msg);
}

void fault_injection_report() noexcept {
  if (!os::fault_injection_running()) return;
  const os::FaultCounts c = os::fault_counts();
  uint64_t calls = 0, failed = 0;
  for (int i = 0; i < os::kNumOps; ++i) calls += c.calls[i], failed += c.failed[i];
  char line[512];
  TextBuf msg(line, sizeof line);
  msg.put("sentinel: fault injection: failed ").put(failed).put(" of ").put(calls).put(" calls");
  for (int i = 0; i < os::kNumOps; ++i) {
    if (c.failed[i] != 0) msg.put(" ").put(os::op_name(static_cast<os::Op>(i))).put("=").put(c.failed[i]);
  }
  msg.put(" partial_move_pages=").put(c.partial_move_pages).put(" pages_failed=").put(c.pages_failed);
  write_line(msg);
}

#else

void fault_injection_start() noexcept {}
void fault_injection_report() noexcept {}

#endif

}  // namespace sentinel::rt
