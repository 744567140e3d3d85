// Process lifecycle: initialisation from the library constructor, fork handling, the service thread,
// and the exit report.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/text_buf.h"
#include "fault_hook.h"
#include "logging.h"
#include "migration.h"
#include "manager.h"
#include "profiler.h"
#include "real_malloc.h"
#include "runtime.h"
#include "runtime_state.h"
#include "core/env.h"
#include "core/process_identity.h"
#include "os/dry_run.h"
#include "os/measure_clock.h"
#include "os/resident.h"
#include "plan/tier_model.h"
#include "topo/topology.h"
#include "service.h"
#include "stats_json.h"

namespace sentinel::rt {

constinit State g_state;

StepSummary step_summary() noexcept {
  SpinGuard clock(g_state.clock_lock);
  return g_state.steps.summary();
}

uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

void fork_prepare() {
  g_state.clock_lock.lock();
  g_state.heap.lock_for_fork();
  g_state.sites.fork_prepare();
  g_state.log.fork_prepare();
}

void fork_parent() {
  g_state.counters.forked_children.fetch_add(1, std::memory_order_relaxed);
  g_state.log.fork_parent();
  g_state.sites.fork_parent();
  g_state.heap.unlock_after_fork_parent();
  g_state.clock_lock.unlock();
}

// The child has only the forking thread: every lock is free again, and the service thread is gone (its
// queued messages are written at the child's exit). A child that does not exec (a DataLoader worker)
// runs as a pass-through allocator: it makes no new objects, holds no share of the host budget (its
// inherited objects are freed into its own copy of the heap, never from the parent's ledger slot), and
// writes no output files (at_exit checks the pid). A child that execs starts afresh.
void fork_child() {
  g_state.threshold.store(~size_t{0}, std::memory_order_relaxed);
  g_state.ledger.detach_after_fork();
  g_state.log.fork_child();
  g_state.sites.fork_child();
  g_state.heap.reset_after_fork_child();
  g_state.clock_lock.reset_after_fork();
  g_state.steps.fork_child();
  service_fork_child();
  // Nobody consumes object events in the child: stop producing them, and no plan is followed there.
  g_state.events_enabled.store(false, std::memory_order_relaxed);
  g_state.births.publish(nullptr);
  profiler_fork_child();
  migration_fork_child();
}

void exit_handler() { at_exit(); }

// Whether this process made objects while its training steps were known (found or marked).
bool trained_under_sentinel() {
  const StepSummary steps = step_summary();
  return g_state.counters.objects_tracked.load(std::memory_order_relaxed) > 0 &&
         (steps.locked || steps.complete_steps > 0);
}

// One log line per output path that got a suffix to keep this process's output apart from others'.
void log_output_note(const char* note) {
  char line[Config::kPathMax * 2];
  size_t n = 0;
  for (const char* s = note; *s != '\0'; ++s) {
    if (*s != '\n' && n + 1 < sizeof line) {
      line[n++] = *s;
      continue;
    }
    if (*s != '\n') continue;
    line[n] = '\0';
    log_write(LogLevel::kWarn, line);
    n = 0;
  }
}

void report_config_error(const char* message) {
  write_all(2, message, __builtin_strlen(message));
  write_all(2, "\n", 1);
}

// The key that names this job's shared files: SENTINEL_JOB, else MASTER_ADDR:MASTER_PORT (set by torchrun
// and by hand for torch.distributed's env:// rendezvous); empty when the process is not part of a job.
void job_key(char* out, size_t cap) {
  TextBuf key(out, cap);
  const char* job = g_state.config.job;
  if (job[0] != '\0') {
    if (!str_equal(job, "none")) key.put(job);
    return;
  }
  const char* addr = env_get("MASTER_ADDR");
  const char* port = env_get("MASTER_PORT");
  if (addr != nullptr && port != nullptr && addr[0] != '\0') key.put(addr).put(":").put(port);
}

// Joins the host ledger of this job so that its ranks on this host share one bytes budget. A
// percentage budget stays per process (p% of each rank's own peak adds up to p% of the ranks' peaks).
void join_host_ledger(const BudgetSpec& budget) {
  const char* key = g_state.job_key;
  if (key[0] == '\0') return;
  if (budget.kind != BudgetKind::kBytes) {
    if (budget.kind == BudgetKind::kPercent)
      log_write(LogLevel::kInfo, "host ledger: a percentage budget is per rank; not shared");
    return;
  }
  const ProcessIdentity id = current_identity();
  char path[place::HostLedger::kPathMax];
  Status joined = Status::error("name too long");
  if (place::HostLedger::path_for("/dev/shm", key, id.host, path, sizeof path)) {
    joined = g_state.ledger.join(path, budget.bytes, getpid(), process_start_time(getpid()));
  }
  if (!joined.is_ok()) {
    log_write(LogLevel::kWarn, (std::string("host ledger: ") + joined.message() +
                                "; this process has the whole SENTINEL_FAST_BUDGET to itself")
                                   .c_str());
    return;
  }
  TextBuf keep(g_state.ledger_path, sizeof g_state.ledger_path);
  keep.put(path);
  g_state.placer.attach_ledger(&g_state.ledger);
  char message[512];
  TextBuf msg(message, sizeof message);
  msg.put("host ledger: job ").put(key).put(" on ").put(id.host).put(": ").put(path).put(" slot ");
  msg.put(uint64_t{g_state.ledger.slot_index()}).put(", ").put(uint64_t{g_state.ledger.live_slots()});
  msg.put(" rank(s) share ").put(g_state.ledger.budget()).put(" fast bytes");
  log_write(LogLevel::kInfo, msg.c_str());
  if (g_state.ledger.budget() != budget.bytes) {
    log_write(LogLevel::kWarn, "host ledger: this job's ranks were given different SENTINEL_FAST_BUDGET values; "
                               "the first rank's holds");
  }
}

// Profile once (managed mode): LOCAL_RANK 0 of each host profiles and shares its profile through a file
// in /dev/shm; the host's other ranks wait for it (manager.cc). Not for a process outside a launched job,
// nor when a profile or plan is given.
void choose_profile_role(const ProcessIdentity& id) {
  const Config& c = g_state.config;
  if (c.mode != Mode::kManaged || g_state.job_key[0] == '\0' || id.rank < 0 || c.profile_in[0] != '\0' ||
      c.plan_in[0] != '\0' || c.profile_wait_s == 0) {
    return;
  }
  if (!job_file_path("/dev/shm", "profile", g_state.job_key, id.host, g_state.shared_profile,
                     sizeof g_state.shared_profile)) {
    g_state.shared_profile[0] = '\0';
    return;
  }
  g_state.profile_leader = id.local_rank >= 0 ? id.local_rank == 0 : id.rank == 0;
}

// SENTINEL_DRY_RUN: the slow node is one the machine does not have, numbered after its last node, with the
// SENTINEL_TIER model's migration channel; its placement is kept in a book over the object heap (os/dry_run.h).
// A real slow node, if there is one, is left alone: nothing in the heap's placement reaches the kernel.
// False (after one line on stderr) when it cannot be set up.
bool simulate_slow_node(topo::Topology* topology) {
  MemorySystem mem;
  std::string error;
  if (!resolve_memory_system(g_state.config.tier, &mem, &error)) {
    report_config_error(("sentinel: invalid SENTINEL_TIER='" + std::string(g_state.config.tier) +
                         "' for SENTINEL_DRY_RUN: " + error + "; running as a pass-through allocator")
                            .c_str());
    return false;
  }
  int last = -1;
  uint64_t real = 0;
  for (const topo::NodeInfo& n : topology->nodes) {
    last = std::max(last, n.id);
    if (n.id >= 0 && n.id < 64) real |= uint64_t{1} << n.id;
  }
  os::DryRunConfig dry;
  dry.start = g_state.heap.base();
  dry.len = g_state.heap.reserved_bytes();
  dry.simulated_node = last + 1;
  dry.real_nodes = real;
  dry.migration_bw_gbps = mem.migration_bw_gbps;
  dry.migration_setup_ns = mem.migration_setup_ns;
  if (!os::start_dry_run(dry)) {
    report_config_error("sentinel: SENTINEL_DRY_RUN: cannot map the placement book (or node ids above 125); "
                        "running as a pass-through allocator");
    return false;
  }
  g_state.heap.keep_pages_across_pools(true);
  const std::string real_slow =
      topology->tiered() ? "; the real slow node " + std::to_string(topology->slow_node) + " is left alone" : "";
  topology->slow_node = dry.simulated_node;
  topology->reason = "dry run: node " + std::to_string(dry.simulated_node) + " simulated as the slow tier (" +
                     mem.name + ", migration " + std::to_string(mem.migration_bw_gbps).substr(0, 4) +
                     " GB/s); placement booked, never made; fast node " + std::to_string(topology->fast_node) +
                     real_slow;
  return true;
}

// Finds the fast and slow nodes and sets up the budget placer. With one memory node there is nothing
// to place: said once, and objects are allocated as before. Returns false (after one line on stderr)
// when SENTINEL_FAST_NODE or SENTINEL_SLOW_NODE name a node that cannot be used.
bool configure_placement(bool* tiered) {
  place::PlacerConfig pc;
  pc.budget = g_state.config.fast_budget;
  const bool budget_set = pc.budget.kind != BudgetKind::kUnlimited;
  topo::Topology topology;
  std::string error;
  if (!topo::detect_topology(topo::options_from_config(g_state.config), &topology, &error)) {
    report_config_error(("sentinel: " + error + "; running as a pass-through allocator").c_str());
    return false;
  }
  if (g_state.config.dry_run && !simulate_slow_node(&topology)) return false;
  pc.fast_node = topology.fast_node;
  pc.slow_node = topology.tiered() ? topology.slow_node : -1;
  if (const Status configured = g_state.placer.configure(pc); !configured.is_ok()) {
    report_config_error(
        ("sentinel: placement: " + std::string(configured.message()) + "; running as a pass-through allocator").c_str());
    return false;
  }
  log_write(LogLevel::kInfo, ("topology: " + topology.reason).c_str());
  TextBuf reason(g_state.topology, sizeof g_state.topology);
  reason.put(topology.reason.c_str());
  migration_init(topology.fast_node, pc.slow_node);
  if (!topology.tiered() && budget_set) {
    log_write(LogLevel::kWarn, "SENTINEL_FAST_BUDGET is set but there is a single memory node: no placement");
  }
  *tiered = topology.tiered();
  if (*tiered) join_host_ledger(pc.budget);
  return true;
}

// os/measure_clock.h: the emulator's virtual clock where asked, or (auto) inside the two-node guest
// when the slow-tier plugin answers. Before any thread measures: the service thread starts later.
void choose_measure_clock(ClockSetting setting) {
  if (setting == ClockSetting::kMonotonic) return;
  const char* in_guest = env_get("SENTINEL_IN_GUEST");
  if (setting == ClockSetting::kAuto && (in_guest == nullptr || in_guest[0] != '1')) return;
  if (os::use_emulator_clock()) {
    log_write(LogLevel::kInfo, "clock: the slow-tier emulator's virtual clock (SENTINEL_CLOCK)");
  } else if (setting == ClockSetting::kEmulator) {
    log_write(LogLevel::kWarn, "SENTINEL_CLOCK=emulator: no slow-tier plugin answered; measuring with CLOCK_MONOTONIC");
  }
}

}  // namespace

void initialise() noexcept {
  Phase expected = Phase::kUninitialised;
  if (!g_state.phase.compare_exchange_strong(expected, Phase::kInitialising)) return;
  real_malloc();

  char message[512];
  Config config;
  if (const Status parsed = parse_config_from_environ(&config); !parsed.is_ok()) {
    report_config_error(parsed.message());
    g_state.phase.store(Phase::kPassthrough, std::memory_order_release);
    return;
  }
  if (find_unknown_variable(message, sizeof message)) report_config_error(message);
  if (config.mode != Mode::kPassthrough) {
    if (const Status resolved = resolve_output_paths_of_this_process(&config); !resolved.is_ok()) {
      report_config_error(resolved.message());
      g_state.phase.store(Phase::kPassthrough, std::memory_order_release);
      return;
    }
  }
  g_state.config = config;
  g_state.sites.skip_module_of(reinterpret_cast<const void*>(&initialise));
  // A Python program: call-sites end at the interpreter's frames, whose return addresses change when CPython
  // specialises the calling instruction (core/call_site.h). PyEval_EvalCode is in the module that holds the
  // interpreter (the python executable, or libpython); null in any other program.
  g_state.sites.stop_at_module_of(dlsym(RTLD_DEFAULT, "PyEval_EvalCode"));
  g_state.init_pid = getpid();
  {
    const ProcessIdentity id = current_identity();
    g_state.rank = id.rank;
    timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    g_state.start_realtime_ns = static_cast<uint64_t>(wall.tv_sec) * 1000000000ull + static_cast<uint64_t>(wall.tv_nsec);
    job_key(g_state.job_key, sizeof g_state.job_key);
    choose_profile_role(id);
  }
  g_state.start_ns = now_ns();
  log_init(config);
  atexit(exit_handler);
  log_output_note(config.output_note);

  if (config.mode == Mode::kPassthrough) {
    log_write(LogLevel::kInfo, "mode passthrough: every allocation goes to the system allocator");
    g_state.phase.store(Phase::kPassthrough, std::memory_order_release);
    return;
  }
  choose_measure_clock(config.clock);
  fault_injection_start();  // test builds only (fault_hook.h)
  if (!g_state.heap.init(config.reserve_bytes)) {
    log_write(LogLevel::kError, "cannot reserve address space for objects; running as pass-through");
    g_state.phase.store(Phase::kPassthrough, std::memory_order_release);
    return;
  }
  bool tiered = false;
  if (!configure_placement(&tiered)) {
    g_state.phase.store(Phase::kPassthrough, std::memory_order_release);
    return;
  }
  if (config.mode == Mode::kManaged && !manager_configure(tiered, message, sizeof message)) {
    report_config_error(message);
    g_state.phase.store(Phase::kPassthrough, std::memory_order_release);
    return;
  }
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  config.mode = g_state.config.mode;  // managed mode on a single node runs as track mode
  // Fixed-size state resident now rather than page by page until its rings first wrap, which a long run
  // would show as growth for hundreds of steps (os/resident.h); on a kernel that refuses, as before. The
  // step tracker (1.8 MiB: the detector with its 8,192-event history, two clocks, the search's log) runs in
  // every mode, the object-event ring (3.3 MiB) only where the service thread consumes it.
  os::make_resident(&g_state.steps, sizeof g_state.steps);
  if (config.mode == Mode::kProfile || config.mode == Mode::kManaged) {
    profiler_init();
    os::make_resident(&g_state.events, sizeof g_state.events);
    g_state.events_enabled.store(true, std::memory_order_release);
  }
  // The service thread (service.h): now, unless a single-threaded program in track mode may stay single-
  // threaded until it creates a thread of its own.
  const bool track_alone = config.mode == Mode::kTrack && g_state.config.status_path[0] == '\0' &&
                           !g_state.placer.enabled() && !migration_enabled();
  g_state.phase.store(Phase::kActive, std::memory_order_release);
  if (!track_alone) service_start_once();
  g_state.threshold.store(config.min_object, std::memory_order_release);

  TextBuf msg(message, sizeof message);
  msg.put("active: mode=").put(mode_name(config.mode)).put(" min_object=").put(config.min_object);
  msg.put(" reserved=").put(g_state.heap.reserved_bytes() >> 30).put("GiB");
  log_write(LogLevel::kInfo, msg.c_str());
}

void at_exit() noexcept {
  const Phase phase = g_state.phase.load(std::memory_order_acquire);
  if (phase != Phase::kActive && phase != Phase::kPassthrough) return;
  g_state.steps.finish(g_state.clock_lock);  // searches what is left, then counts the last step
  const bool original_process = getpid() == g_state.init_pid;
  if (original_process && g_state.events_enabled.load(std::memory_order_acquire)) {
    service_drain();
    profiler_at_exit();
    manager_at_exit();
  }
  flush_deferred();
  // Per-process output paths (%p) name files of the processes that trained under Sentinel: one that made no
  // object in a training step (a launch script's shell, cat, mktemp; torch.compile's compiler processes)
  // leaves none (core/config.h).
  const bool made_objects = trained_under_sentinel();
  if (original_process && g_state.config.stats_path[0] != '\0' && (made_objects || !g_state.config.stats_per_process)) {
    std::string error;
    if (!write_stats_json(g_state.config.stats_path, &error)) {
      log_write(LogLevel::kError, ("cannot write SENTINEL_STATS file: " + error).c_str());
    }
  }
  if (original_process && g_state.config.trace_path[0] != '\0' && (made_objects || !g_state.config.trace_per_process)) {
    // Unlocked on purpose (writing allocates): threads still running at exit may tear a line or two.
    std::string error;
    if (!write_event_trace(g_state.config.trace_path, &error)) {
      log_write(LogLevel::kError, ("cannot write SENTINEL_TRACE file: " + error).c_str());
    }
  }
  if (original_process) {
    fault_injection_report();
    release_output_claims();
    g_state.ledger.leave();
  }
  char message[256];
  TextBuf msg(message, sizeof message);
  const StepSummary steps = step_summary();
  msg.put("exit: steps=").put(steps.complete_steps);
  msg.put(" period=").put(uint64_t{steps.period});
  msg.put(" objects=").put(g_state.counters.objects_tracked.load());
  msg.put(" peak_object_bytes=").put(g_state.counters.peak_live_bytes.load());
  log_write(LogLevel::kInfo, msg.c_str());
}

}  // namespace sentinel::rt
