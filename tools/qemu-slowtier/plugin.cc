// libsentinel_qemu_slowtier.so: a QEMU 7.2 TCG plugin that turns node 1 of the two-node guest into
// a slow tier that can be measured. For every vCPU it counts instructions, runs every RAM access
// through a cache model (cache_model.h), attributes each miss and write-back to node 0 or node 1
// (node_map.h) and advances a virtual clock from those counts and the tier model's latency and
// bandwidth (virtual_clock.h). A guest program reads everything synchronously through a mailbox
// page (mailbox.h); at exit the totals go to a JSON file. It is also a PMU for guest processes that
// register a sample ring (pmu_registry.h): misses and write-backs in their address ranges become
// perf sample records. Model and limits: docs/slow-tier-emulator.md.
//
// Threads: with MTTCG every vCPU runs on its own host thread and only that thread calls the
// callbacks for its vCPU index, so a vCPU's cache model and clock need no lock. Counters that other
// vCPUs read (for mailbox totals) are relaxed atomics written only by their owner. The translation
// callback touches no per-vCPU state.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "cache_model.h"
#include "os/slowtier_mailbox.h"
#include "node_map.h"
#include "plugin_config.h"
#include "pmu_registry.h"
#include "qemu_plugin_api.h"
#include "stream_detector.h"
#include "translation_info.h"
#include "vcpu_sync.h"
#include "virtual_clock.h"

extern "C" {
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const qemu_info_t* info, int argc,
                                                               char** argv);
}

namespace sentinel::slowtier {
namespace {

using Counter = std::atomic<uint64_t>;

// Only the owning vCPU thread writes; others read.
inline void bump(Counter& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
inline uint64_t get(const Counter& c) { return c.load(std::memory_order_relaxed); }

struct alignas(64) VcpuState {
  VcpuState(const PluginConfig& c, const ClockParams& p)
      : cache(c.cache_bytes, 64, c.cache_ways, /*track_vaddrs=*/true), streams(c.stream), clock(p) {}
  CacheModel cache;
  StreamDetector streams;
  VirtualClock clock;
  double owed_delay_ns = 0;
  Counter instructions{0};
  Counter kernel_instructions{0};
  Counter string_elements{0};
  Counter read_misses[2] = {0, 0};
  Counter write_misses[2] = {0, 0};
  Counter streamed_misses[2] = {0, 0};
  Counter kernel_misses[2] = {0, 0};
  Counter writebacks[2] = {0, 0};
  Counter other_ram{0};
  Counter published_ns{0};  // clock.now_ns() at the last epoch close
  std::atomic<bool> idle{true};  // halted (or not started yet): holds no other vCPU back
  Counter sync_waits{0};         // epochs after which this vCPU waited for a slower one
  Counter sync_wait_host_ns{0};
  Counter sync_timeouts{0};      // waits that ended at max_wait_host_ns
};

struct BackingFile {
  unsigned char* base = nullptr;
  uint64_t bytes = 0;
};

struct State {
  PluginConfig config;
  ClockParams clock;
  NodeMap map{0, 0, 0};
  std::vector<std::unique_ptr<VcpuState>> vcpus;
  BackingFile backing[2];
  std::unique_ptr<PmuRegistry> pmu;  // the emulated PMU's registrations
  Counter mailbox_reads[2] = {0, 0};   // answered, per node of the mailbox page (layout verified)
  Counter mailbox_layout_failures{0};  // cookie not where the layout says: layout assumption wrong
  std::atomic<bool> warned_layout{false};
};

State* g_state = nullptr;


double host_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

void spin_host_ns(double ns) {
  const double start = host_ns();
  while (host_ns() - start < ns) {
  }
}

// vcpu_sync.h: wait (in host time) while this vCPU is a quantum ahead of the slowest busy other one.
// Idle vCPUs hold nobody back.
void keep_in_step(unsigned vcpu_index, VcpuState& v) {
  const VcpuSyncParams& p = g_state->config.sync;
  const size_t n = g_state->vcpus.size();
  if (p.quantum_ns <= 0 || n < 2 || n > SENTINEL_SLOWTIER_MAX_VCPUS) return;
  const double mine = v.clock.now_ns();
  double clocks[SENTINEL_SLOWTIER_MAX_VCPUS];
  bool idle[SENTINEL_SLOWTIER_MAX_VCPUS];
  double start = 0;
  for (;;) {
    for (size_t i = 0; i < n; ++i) {
      clocks[i] = static_cast<double>(get(g_state->vcpus[i]->published_ns));
      idle[i] = g_state->vcpus[i]->idle.load(std::memory_order_relaxed);
    }
    if (!must_wait(mine, slowest_busy_other(clocks, idle, n, vcpu_index), p)) break;
    const double now = host_ns();
    if (start == 0) {
      start = now;
      bump(v.sync_waits);
    } else if (now - start >= p.max_wait_host_ns) {
      bump(v.sync_timeouts);
      break;
    }
    const timespec pause{0, 20'000};  // 20 us: the slow vCPU needs milliseconds of host time anyway
    nanosleep(&pause, nullptr);
  }
  if (start != 0) bump(v.sync_wait_host_ns, static_cast<uint64_t>(host_ns() - start));
}

void close_epoch(VcpuState& v) {
  v.clock.close_epoch();
  v.published_ns.store(static_cast<uint64_t>(v.clock.now_ns()), std::memory_order_relaxed);
}

VcpuState* vcpu_state(unsigned index) {
  return index < g_state->vcpus.size() ? g_state->vcpus[index].get() : nullptr;
}

void on_tb_exec(unsigned vcpu_index, void* udata) {
  VcpuState* v = vcpu_state(vcpu_index);
  if (v == nullptr) return;
  const BlockInfo b = BlockInfo::unpack(reinterpret_cast<uintptr_t>(udata));
  if (v->idle.load(std::memory_order_relaxed)) v->idle.store(false, std::memory_order_relaxed);
  bump(v->instructions, b.instructions);
  if (b.kernel) bump(v->kernel_instructions, b.instructions);
  if (b.string_element_bytes != 0) {
    bump(v->string_elements, b.instructions);
    v->clock.add_string_elements(b.instructions, b.string_element_bytes);
  } else {
    v->clock.add_instructions(b.instructions);
  }
  if (v->clock.open_instructions() >= g_state->config.epoch_instructions) {
    close_epoch(*v);
    keep_in_step(vcpu_index, *v);
  }
  if (v->owed_delay_ns >= 20000) {  // spin in batches: one clock read per ~20 us owed
    spin_host_ns(v->owed_delay_ns);
    v->owed_delay_ns = 0;
  }
}

void fill_counters(unsigned vcpu_index, sentinel_slowtier_counters* out) {
  State& s = *g_state;
  std::memset(out, 0, sizeof *out);
  out->vcpu = vcpu_index;
  out->n_vcpus = static_cast<uint32_t>(std::min<size_t>(s.vcpus.size(), SENTINEL_SLOWTIER_MAX_VCPUS));
  for (size_t i = 0; i < s.vcpus.size(); ++i) {
    const VcpuState& v = *s.vcpus[i];
    uint64_t ns = get(v.published_ns);
    out->instructions += get(v.instructions);
    out->virtual_ns = std::max(out->virtual_ns, ns);
    out->busy_virtual_ns += ns;
    out->fast_read_misses += get(v.read_misses[0]);
    out->slow_read_misses += get(v.read_misses[1]);
    out->fast_write_misses += get(v.write_misses[0]);
    out->slow_write_misses += get(v.write_misses[1]);
    out->fast_writebacks += get(v.writebacks[0]);
    out->slow_writebacks += get(v.writebacks[1]);
    out->kernel_instructions += get(v.kernel_instructions);
    out->string_elements += get(v.string_elements);
    out->fast_streamed_misses += get(v.streamed_misses[0]);
    out->slow_streamed_misses += get(v.streamed_misses[1]);
    out->kernel_fast_misses += get(v.kernel_misses[0]);
    out->kernel_slow_misses += get(v.kernel_misses[1]);
    out->other_ram_accesses += get(v.other_ram);
    if (i < SENTINEL_SLOWTIER_MAX_VCPUS) {
      out->vcpu_virtual_ns[i] = ns;
      out->vcpu_instructions[i] = get(v.instructions);
    }
  }
}

// The marked store has just written request_seq into a mailbox page at RAM address `ram_addr`.
void answer_mailbox(unsigned vcpu_index, VcpuState& v, uint64_t ram_addr) {
  State& s = *g_state;
  Node node = s.map.node_of(ram_addr);
  if (node == Node::kOther || (ram_addr & (kMailboxPageBytes - 1)) != offsetof(Mailbox, request_seq))
    return;
  const BackingFile& file = s.backing[static_cast<int>(node)];
  uint64_t page = s.map.backend_offset(ram_addr) & ~(kMailboxPageBytes - 1);
  if (file.base == nullptr || page + kMailboxPageBytes > file.bytes) return;
  auto* box = reinterpret_cast<Mailbox*>(file.base + page);
  if (std::memcmp(box->cookie, kMailboxCookie, sizeof kMailboxCookie) != 0) {
    bump(s.mailbox_layout_failures);
    if (!s.warned_layout.exchange(true)) {
      qemu_plugin_outs("sentinel-slowtier: a mailbox page is not where the RAM layout says "
                       "(node1_base wrong for this QEMU?); reads are not answered\n");
    }
    return;
  }
  close_epoch(v);
  sentinel_slowtier_counters counters;
  fill_counters(vcpu_index, &counters);
  counters.mailbox_node = static_cast<uint32_t>(node);
  std::memcpy(&box->counters, &counters, sizeof counters);
  box->abi = kMailboxAbi;
  uint64_t seq = __atomic_load_n(&box->request_seq, __ATOMIC_RELAXED);
  __atomic_store_n(&box->response_seq, seq, __ATOMIC_RELEASE);
  bump(s.mailbox_reads[static_cast<int>(node)]);
}

// A marked store that may be an emulated PMU request (pmu_registry.h); false when it is not one.
bool pmu_request(uint64_t vaddr, uint64_t ram_addr) {
  State& s = *g_state;
  const Node node = s.map.node_of(ram_addr);
  if (node == Node::kOther) return false;
  const BackingFile& file = s.backing[static_cast<int>(node)];
  const uint64_t page = s.map.backend_offset(ram_addr) & ~(kMailboxPageBytes - 1);
  if (file.base == nullptr || page + kMailboxPageBytes > file.bytes) return false;
  return s.pmu->on_marked_store(vaddr, file.base + page);
}

void on_mem(unsigned vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr, void* udata) {
  VcpuState* v = vcpu_state(vcpu_index);
  if (v == nullptr) return;
  qemu_plugin_hwaddr* hw = qemu_plugin_get_hwaddr(info, vaddr);
  if (hw == nullptr || qemu_plugin_hwaddr_is_io(hw)) return;
  const uint64_t ram_addr = qemu_plugin_hwaddr_phys_addr(hw);
  const bool is_store = qemu_plugin_mem_is_store(info);
  const AccessInfo a = AccessInfo::unpack(reinterpret_cast<uintptr_t>(udata));
  const Node node = g_state->map.node_of(ram_addr);
  if (node == Node::kOther) {
    bump(v->other_ram);
  } else {
    CacheAccessResult r = v->cache.access(ram_addr, is_store, vaddr);
    const int n = static_cast<int>(node);
    PmuRegistry& pmu = *g_state->pmu;
    if (!r.hit) {
      bump(is_store ? v->write_misses[n] : v->read_misses[n]);
      if (a.kernel) bump(v->kernel_misses[n]);
      // A fast-string store writes whole lines without reading them first (no read-for-ownership);
      // the line still costs its write-back.
      if (!(is_store && a.string_op)) {
        const bool streamed = v->streams.on_miss(ram_addr >> v->cache.line_shift());
        if (streamed) bump(v->streamed_misses[n]);
        v->clock.add_miss(n, streamed);
      }
      if (n == 1) v->owed_delay_ns += g_state->config.delay_ns;
      if (pmu.active()) {
        pmu.on_event(vcpu_index, vaddr, is_store ? emulated_pmu::EventKind::kStoreMiss : emulated_pmu::EventKind::kLoadMiss,
                     n, static_cast<uint64_t>(v->clock.now_ns()));
      }
    }
    if (r.wrote_back) {
      Node victim = g_state->map.node_of(r.written_back_line << v->cache.line_shift());
      if (victim != Node::kOther) {
        bump(v->writebacks[static_cast<int>(victim)]);
        v->clock.add_writeback(static_cast<int>(victim));
        if (pmu.active()) {
          pmu.on_event(vcpu_index, r.written_back_vaddr, emulated_pmu::EventKind::kWriteback,
                       static_cast<int>(victim), static_cast<uint64_t>(v->clock.now_ns()));
        }
      }
    }
  }
  if (a.mailbox_store && is_store && !pmu_request(vaddr, ram_addr)) answer_mailbox(vcpu_index, *v, ram_addr);
}

bool is_marker(const qemu_plugin_insn* insn) {
  return qemu_plugin_insn_size(insn) == sizeof kMarkerInsn &&
         std::memcmp(qemu_plugin_insn_data(insn), kMarkerInsn, sizeof kMarkerInsn) == 0;
}

uint32_t string_element_bytes(const qemu_plugin_insn* insn) {
  return g_state->clock.string_bytes_per_cycle > 0
             ? rep_string_element_bytes(static_cast<const uint8_t*>(qemu_plugin_insn_data(insn)),
                                        qemu_plugin_insn_size(insn))
             : 0;
}

void on_tb_trans(qemu_plugin_id_t, qemu_plugin_tb* tb) {
  const size_t n = qemu_plugin_tb_n_insns(tb);
  const bool kernel = is_kernel_address(qemu_plugin_tb_vaddr(tb));
  BlockInfo block{static_cast<uint32_t>(n), kernel, 0};
  // TCG runs a rep movs/stos one element per execution of a block that holds only that instruction.
  if (n == 1) block.string_element_bytes = string_element_bytes(qemu_plugin_tb_get_insn(tb, 0));
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS,
                                       reinterpret_cast<void*>(block.pack()));
  bool after_marker = false;
  for (size_t i = 0; i < n; ++i) {
    qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    const AccessInfo access{after_marker, kernel, string_element_bytes(insn) != 0};
    qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                     reinterpret_cast<void*>(access.pack()));
    after_marker = is_marker(insn);
  }
}

void on_idle(qemu_plugin_id_t, unsigned vcpu_index) {
  if (VcpuState* v = vcpu_state(vcpu_index)) {
    close_epoch(*v);
    v->idle.store(true, std::memory_order_relaxed);
  }
}

// A vCPU that slept catches up with the latest clock: wall time passed for it too.
void on_resume(qemu_plugin_id_t, unsigned vcpu_index) {
  VcpuState* v = vcpu_state(vcpu_index);
  if (v == nullptr) return;
  uint64_t latest = 0;
  for (const auto& other : g_state->vcpus) latest = std::max(latest, get(other->published_ns));
  v->clock.advance_to(static_cast<double>(latest));
  v->published_ns.store(static_cast<uint64_t>(v->clock.now_ns()), std::memory_order_relaxed);
  v->idle.store(false, std::memory_order_relaxed);
}

void write_stats(qemu_plugin_id_t, void*) {
  State& s = *g_state;
  for (auto& v : s.vcpus) close_epoch(*v);
  if (s.config.stats_path.empty()) return;
  sentinel_slowtier_counters t;
  fill_counters(0, &t);
  FILE* f = std::fopen(s.config.stats_path.c_str(), "w");
  if (f == nullptr) {
    qemu_plugin_outs("sentinel-slowtier: cannot write the stats file\n");
    return;
  }
  auto u = [](uint64_t x) { return static_cast<unsigned long long>(x); };
  std::fprintf(f, "{\n  \"slow_read_misses\": %llu, \"slow_write_misses\": %llu,\n", u(t.slow_read_misses),
               u(t.slow_write_misses));
  std::fprintf(f, "  \"fast_read_misses\": %llu, \"fast_write_misses\": %llu,\n", u(t.fast_read_misses),
               u(t.fast_write_misses));
  std::fprintf(f, "  \"slow_writebacks\": %llu, \"fast_writebacks\": %llu,\n", u(t.slow_writebacks),
               u(t.fast_writebacks));
  std::fprintf(f, "  \"instructions\": %llu, \"virtual_ns\": %llu, \"busy_virtual_ns\": %llu,\n",
               u(t.instructions), u(t.virtual_ns), u(t.busy_virtual_ns));
  std::fprintf(f, "  \"other_ram_accesses\": %llu,\n", u(t.other_ram_accesses));
  std::fprintf(f, "  \"kernel_instructions\": %llu, \"string_elements\": %llu,\n", u(t.kernel_instructions),
               u(t.string_elements));
  std::fprintf(f, "  \"fast_streamed_misses\": %llu, \"slow_streamed_misses\": %llu,\n",
               u(t.fast_streamed_misses), u(t.slow_streamed_misses));
  std::fprintf(f, "  \"kernel_fast_misses\": %llu, \"kernel_slow_misses\": %llu,\n", u(t.kernel_fast_misses),
               u(t.kernel_slow_misses));
  std::fprintf(f, "  \"mailbox_reads_node0\": %llu, \"mailbox_reads_node1\": %llu, "
               "\"mailbox_layout_failures\": %llu,\n",
               u(get(s.mailbox_reads[0])), u(get(s.mailbox_reads[1])), u(get(s.mailbox_layout_failures)));
  const PmuTotals pmu = s.pmu->totals();
  std::fprintf(f, "  \"pmu_registrations\": %llu, \"pmu_requests\": %llu, \"pmu_samples\": %llu, "
               "\"pmu_samples_dropped\": %llu, \"pmu_published_bytes\": %llu, \"pmu_missing_pages\": %llu,\n",
               u(pmu.registrations), u(pmu.requests), u(pmu.samples), u(pmu.dropped), u(pmu.published_bytes),
               u(pmu.missing_pages));
  std::fprintf(f, "  \"vcpus\": [");
  for (size_t i = 0; i < s.vcpus.size(); ++i) {
    const VcpuState& v = *s.vcpus[i];
    std::fprintf(f, "%s{\"instructions\": %llu, \"virtual_ns\": %llu, \"slow_read_misses\": %llu, "
                 "\"slow_write_misses\": %llu, \"sync_waits\": %llu, \"sync_wait_host_ns\": %llu, "
                 "\"sync_timeouts\": %llu}", i ? ", " : "", u(get(v.instructions)),
                 u(get(v.published_ns)), u(get(v.read_misses[1])), u(get(v.write_misses[1])),
                 u(get(v.sync_waits)), u(get(v.sync_wait_host_ns)), u(get(v.sync_timeouts)));
  }
  std::fprintf(f, "],\n  \"parameters\": {%s}\n}\n", parameters_json(s.config).c_str());
  std::fclose(f);
}

bool map_backing(const std::string& path, uint64_t bytes, BackingFile* out, std::string* error) {
  if (path.empty()) return true;  // no mailbox on this node: counting still works
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open " + path;
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < bytes) {
    close(fd);
    *error = path + " is smaller than the node";
    return false;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *error = "cannot map " + path;
    return false;
  }
  out->base = static_cast<unsigned char*>(p);
  out->bytes = bytes;
  return true;
}

int install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv) {
  auto fail = [](const std::string& msg) {
    qemu_plugin_outs(("sentinel-slowtier: " + msg + "\n").c_str());
    return -1;
  };
  if (!info->system_emulation) return fail("needs system emulation");
  auto state = std::make_unique<State>();
  std::string err;
  if (!parse_plugin_args(argc, argv, &state->config, &err)) return fail(err);
  const PluginConfig& c = state->config;
  state->clock = clock_params(c);
  state->map = NodeMap(c.node0_bytes, c.node1_base, c.node1_bytes);
  if (!map_backing(c.node0_file, c.node0_bytes, &state->backing[0], &err) ||
      !map_backing(c.node1_file, c.node1_bytes, &state->backing[1], &err)) {
    return fail(err);
  }
  state->pmu = std::make_unique<PmuRegistry>(c.tier.fast.latency_ns, c.tier.slow.latency_ns);
  int n = std::max(info->system.max_vcpus, info->system.smp_vcpus);
  for (int i = 0; i < std::max(n, 1); ++i) {
    state->vcpus.push_back(std::make_unique<VcpuState>(c, state->clock));
  }
  g_state = state.release();  // lives until the process exits; callbacks may run until then
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
  qemu_plugin_register_vcpu_idle_cb(id, on_idle);
  qemu_plugin_register_vcpu_resume_cb(id, on_resume);
  qemu_plugin_register_atexit_cb(id, write_stats, nullptr);
  return 0;
}

}  // namespace
}  // namespace sentinel::slowtier

int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv) {
  return sentinel::slowtier::install(id, info, argc, argv);
}
