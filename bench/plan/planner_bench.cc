// Times the Sentinel planner on large profiles (target: <= 100 ms for 10,000 objects) and prints the
// modeled step-time ratios of every policy on synthetic DNN training profiles at 20% budget.
// Usage: planner_bench [repeats]. Times are wall-clock of this process; step times are modeled.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "plan/planner.h"
#include "plan/replay.h"
#include "plan/synthetic_profile.h"

using namespace sentinel;

namespace {

double time_plan(const StepProfile& p, const MemorySystem& mem, int repeats, Plan* plan) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    ProfileIndex index;
    std::string err;
    PlannerConfig cfg;
    if (!index.build(p, &err) || !plan_sentinel(index, mem, cfg, plan, &err)) {
      std::fprintf(stderr, "planning failed: %s\n", err.c_str());
      std::exit(1);
    }
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  MemorySystem cxl, optane;
  memory_system_preset("cxl", &cxl, nullptr);
  memory_system_preset("optane", &optane, nullptr);

  std::printf("== planner time (index build + plan, best of %d) ==\n", repeats);
  {
    DnnConfig c;
    c.layers = 1111;  // 9 objects per layer: ~10,000 objects
    c.width = 256;
    c.batch = 256;
    c.jitter = 0.1;
    StepProfile p = dnn_training_profile(c);
    Plan plan;
    double ms = time_plan(p, cxl, repeats, &plan);
    std::printf("dnn     objects=%zu period=%u: %.1f ms (moves %zu)\n", p.objects.size(), p.period, ms,
                plan.move_count());
  }
  {
    RandomProfileConfig c;
    c.objects = 10000;
    c.period = 10000;
    c.seed = 7;
    StepProfile p = random_profile(c);
    Plan plan;
    double ms = time_plan(p, cxl, repeats, &plan);
    std::printf("random  objects=%zu period=%u: %.1f ms (moves %zu)\n", p.objects.size(), p.period, ms,
                plan.move_count());
  }

  std::printf("\n== modeled step time / all-DRAM at 20%% budget (synthetic DNN profiles) ==\n");
  struct Case { const char* name; DnnConfig c; };
  Case cases[3];
  cases[0].name = "mlp16-w1024-b2048-adam";
  cases[1].name = "mlp32-w2048-b1024-sgdm";
  cases[1].c.layers = 32; cases[1].c.width = 2048; cases[1].c.batch = 1024; cases[1].c.optimizer_states = 1;
  cases[2].name = "mlp24-w1024-b8192-memheavy";
  cases[2].c.layers = 24; cases[2].c.batch = 8192; cases[2].c.gflops = 400;
  for (const Case& cs : cases) {
    StepProfile p = dnn_training_profile(cs.c);
    ProfileIndex index;
    std::string err;
    index.build(p, &err);
    for (const char* tier : {"cxl", "optane", "cxl-2m", "optane-2m"}) {
      MemorySystem mem;
      memory_system_preset(tier, &mem, nullptr);
      ReplayOptions o;
      o.planner.budget_fraction = 0.2;
      std::vector<ReplayRow> rows;
      if (!replay_policies(index, mem, o, &rows, &err)) {
        std::fprintf(stderr, "%s\n", err.c_str());
        return 1;
      }
      double sentinel = 0, dram = 0, best = 1e300;
      std::string best_name;
      for (const auto& r : rows) {
        if (r.policy == "sentinel") sentinel = r.step_ns;
        else if (r.policy == "all-dram") dram = r.step_ns;
        else if (r.step_ns < best) { best = r.step_ns; best_name = r.policy; }
      }
      double gap = best - dram;
      std::printf("%-28s %-10s sentinel %.4f  best baseline %-12s %.4f  gap closed %5.1f%%\n", cs.name, tier,
                  sentinel / dram, best_name.c_str(), best / dram, gap > 0 ? 100 * (best - sentinel) / gap : 100.0);
    }
  }
  return 0;
}
