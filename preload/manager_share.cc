// Managed mode, profile once (docs/distributed.md): LOCAL_RANK 0 shares its profile with the host's other
// ranks, which wait for it and match it. Caller holds g_manager_mu (manager_state.h).
#include <sys/stat.h>

#include <memory>
#include <string>

#include "logging.h"
#include "manager_state.h"
#include "profile/profile_io.h"
#include "profiler.h"
#include "runtime_state.h"

namespace sentinel::rt::managed {

// Profile once (docs/distributed.md): a rank other than its host's LOCAL_RANK 0 waits for that rank's
// profile, then matches it against its own steps like SENTINEL_PROFILE_IN; when none comes in time it
// profiles itself.
void poll_shared_profile(Manager& m) {
  struct stat st;
  const char* path = g_state.shared_profile;
  const bool fresh = stat(path, &st) == 0 &&
                     static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + static_cast<uint64_t>(st.st_mtim.tv_nsec) >=
                         g_state.start_realtime_ns;
  if (!fresh) {
    if (now_ns() < m.wait_until_ns) return;
    log_write(LogLevel::kWarn, ("managed mode: no profile from LOCAL_RANK 0 within " +
                                std::to_string(g_state.config.profile_wait_s) + " s: profiling this rank")
                                   .c_str());
    m.stage = Stage::kProfiling;
    profiler_set_active(true);
    return;
  }
  auto profile = std::make_shared<StepProfile>();
  std::string error;
  if (!read_profile_file(path, profile.get(), &error) || !take_candidate(m, profile, &error)) {
    log_write(LogLevel::kWarn, ("managed mode: LOCAL_RANK 0's profile rejected (" + error + "): profiling this rank").c_str());
    m.stage = Stage::kProfiling;
    profiler_set_active(true);
    return;
  }
  log_write(LogLevel::kInfo, ("managed mode: took LOCAL_RANK 0's profile " + std::string(path)).c_str());
  m.profile_source = "LOCAL_RANK 0";
  m.stage = Stage::kMatchingProfile;
}

// LOCAL_RANK 0 shares its first profile with the host's other ranks (written to a temporary name and
// renamed, so they never read half a file).
void publish_shared_profile(Manager& m) {
  if (!g_state.profile_leader || m.shared_profile_published || !m.profile) return;
  m.shared_profile_published = true;
  std::string error;
  if (write_profile_file(g_state.shared_profile, *m.profile, &error)) {
    log_write(LogLevel::kInfo, ("managed mode: profile shared with this host's ranks: " +
                                std::string(g_state.shared_profile)).c_str());
  } else {
    log_write(LogLevel::kWarn, ("managed mode: cannot share the profile (" + error + ")").c_str());
  }
}

}  // namespace sentinel::rt::managed
