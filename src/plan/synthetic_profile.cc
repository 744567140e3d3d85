#include "plan/synthetic_profile.h"

#include <algorithm>
#include <map>
#include <random>

namespace sentinel {
namespace {

// Builds a profile event by event: every non-persistent allocation starts a new phase.
class StepBuilder {
 public:
  explicit StepBuilder(uint64_t seed, double jitter) : rng_(seed), jitter_(jitter) {}

  uint32_t persistent(uint64_t size, uint64_t tag) {
    ObjectProfile o;
    o.tag = tag;
    o.site = tag >> 16;
    o.size = vary(size);
    o.persistent = true;
    objs_.push_back(o);
    acc_.emplace_back();
    return static_cast<uint32_t>(objs_.size() - 1);
  }
  uint32_t alloc(uint64_t size, uint64_t tag, uint32_t occurrence) {
    phases_.push_back({});
    ObjectProfile o;
    o.tag = tag;
    o.site = tag >> 16;
    o.occurrence = occurrence;
    o.size = vary(size);
    o.birth_phase = current();
    o.death_phase = UINT32_MAX;  // set by free() or finish()
    objs_.push_back(o);
    acc_.emplace_back();
    return static_cast<uint32_t>(objs_.size() - 1);
  }
  void touch(uint32_t obj, double read_passes, double write_passes) {
    const double lines = static_cast<double>(objs_[obj].size) / 64.0;
    auto& a = acc_[obj][current()];
    a.phase = current();
    a.reads += static_cast<uint64_t>(lines * read_passes);
    a.writes += static_cast<uint64_t>(lines * write_passes);
  }
  void free(uint32_t obj) { objs_[obj].death_phase = current(); }
  void duration(double ns) { phases_.back().duration_ns += static_cast<uint64_t>(std::max(1.0, vary_d(ns))); }
  uint64_t size(uint32_t obj) const { return objs_[obj].size; }
  uint32_t current() const { return static_cast<uint32_t>(phases_.size() - 1); }

  StepProfile finish(const std::string& program) {
    StepProfile p;
    p.period = static_cast<uint32_t>(phases_.size());
    p.phases = phases_;
    p.profiled_steps = 1;
    p.sampler = "none";
    p.program = program;
    for (size_t i = 0; i < objs_.size(); ++i) {
      ObjectProfile o = objs_[i];
      if (o.persistent) {
        o.birth_phase = 0;
        o.death_phase = p.period - 1;
      } else if (o.death_phase == UINT32_MAX) {
        o.death_phase = p.period - 1;
      }
      for (auto& [ph, a] : acc_[i]) o.accesses.push_back(a);
      p.objects.push_back(std::move(o));
    }
    // Peak of live bytes and the step time.
    std::vector<int64_t> diff(2 * p.period + 2, 0);
    for (const auto& o : p.objects) {
      diff[o.birth_phase] += static_cast<int64_t>(o.size);
      diff[o.death_phase + 1] -= static_cast<int64_t>(o.size);
    }
    int64_t run = 0;
    std::vector<int64_t> live(p.period, 0);
    for (uint32_t k = 0; k < 2 * p.period; ++k) {
      run += diff[k];
      live[k % p.period] += run;
    }
    for (int64_t v : live) p.peak_object_bytes = std::max<uint64_t>(p.peak_object_bytes, static_cast<uint64_t>(v));
    for (const auto& ph : p.phases) p.step_time_ns += ph.duration_ns;
    return p;
  }

 private:
  uint64_t vary(uint64_t v) {
    if (jitter_ <= 0) return v;
    std::uniform_real_distribution<double> d(1.0 - jitter_, 1.0 + jitter_);
    return std::max<uint64_t>(4096, static_cast<uint64_t>(static_cast<double>(v) * d(rng_)));
  }
  double vary_d(double v) {
    if (jitter_ <= 0) return v;
    std::uniform_real_distribution<double> d(1.0 - jitter_, 1.0 + jitter_);
    return v * d(rng_);
  }

  std::mt19937_64 rng_;
  double jitter_;
  std::vector<PhaseProfile> phases_;
  std::vector<ObjectProfile> objs_;
  std::vector<std::map<uint32_t, PhaseAccess>> acc_;
};

enum : uint64_t { kInput = 1, kWeight, kGrad, kOptState, kAct, kFwdTemp, kActGrad, kBwdTemp, kOptTemp };
uint64_t tag_of(uint64_t kind, uint64_t layer, uint64_t idx = 0) {
  return (kind << 48) | (layer << 16) | idx;
}

}  // namespace

StepProfile dnn_training_profile(const DnnConfig& c) {
  StepBuilder b(c.seed, std::clamp(c.jitter, 0.0, 0.5));
  const uint32_t L = std::max<uint32_t>(1, c.layers);
  const uint64_t wbytes = c.width * c.width * c.elem_bytes;
  const uint64_t abytes = c.batch * c.width * c.elem_bytes;
  const double gemm_ns = 2.0 * static_cast<double>(c.batch * c.width * c.width) / c.gflops;
  auto stream_ns = [&](double bytes) { return bytes / c.dram_gbps; };
  std::vector<uint32_t> W(L), G(L), A(L);
  std::vector<std::vector<uint32_t>> S(L);
  for (uint32_t i = 0; i < L; ++i) {
    W[i] = b.persistent(wbytes, tag_of(kWeight, i));
    G[i] = b.persistent(wbytes, tag_of(kGrad, i));
    for (uint32_t s = 0; s < c.optimizer_states; ++s) S[i].push_back(b.persistent(wbytes, tag_of(kOptState, i, s)));
  }
  // Forward.
  uint32_t x = b.alloc(abytes, tag_of(kInput, 0), 0);
  b.touch(x, 0, 1);  // the data loader fills the batch
  b.duration(stream_ns(static_cast<double>(abytes)));
  uint32_t in = x;
  for (uint32_t i = 0; i < L; ++i) {
    A[i] = b.alloc(abytes, tag_of(kAct, i), i);
    b.touch(W[i], c.gemm_passes, 0);
    b.touch(in, c.gemm_passes, 0);
    b.touch(A[i], 0, 1);
    b.duration(std::max(gemm_ns, stream_ns(static_cast<double>(2 * abytes + wbytes))));
    uint32_t t = b.alloc(abytes, tag_of(kFwdTemp, i), i);  // bias + activation function workspace
    b.touch(A[i], 1, 1);
    b.touch(t, 1, 1);
    b.duration(stream_ns(static_cast<double>(3 * abytes)));
    b.free(t);
    in = A[i];
  }
  // Loss gradient, then backward.
  uint32_t grad = b.alloc(abytes, tag_of(kActGrad, L), L);
  b.touch(A[L - 1], 1, 0);
  b.touch(grad, 0, 1);
  b.duration(stream_ns(static_cast<double>(2 * abytes)));
  for (uint32_t ii = L; ii-- > 0;) {
    uint32_t input = ii == 0 ? x : A[ii - 1];
    uint32_t dgrad = b.alloc(abytes, tag_of(kActGrad, ii), ii);  // gradient w.r.t. the layer input
    b.touch(grad, 2 * c.gemm_passes, 0);
    b.touch(W[ii], c.gemm_passes, 0);
    b.touch(input, c.gemm_passes, 0);
    b.touch(A[ii], 1, 0);
    b.touch(G[ii], 0, 1);
    b.touch(dgrad, 0, 1);
    b.duration(std::max(2 * gemm_ns, stream_ns(static_cast<double>(4 * abytes + 2 * wbytes))));
    b.free(grad);
    b.free(A[ii]);
    uint32_t t = b.alloc(abytes, tag_of(kBwdTemp, ii), ii);  // activation-function derivative
    b.touch(dgrad, 1, 1);
    b.touch(t, 1, 1);
    b.duration(stream_ns(static_cast<double>(3 * abytes)));
    b.free(t);
    grad = dgrad;
  }
  b.free(grad);
  b.free(x);
  // Optimizer, layer by layer: each update allocates a small workspace (one event per layer).
  for (uint32_t i = 0; i < L; ++i) {
    uint32_t t = b.alloc(64 * 1024, tag_of(kOptTemp, i), i);
    b.touch(W[i], 1, 1);
    b.touch(G[i], 1, 1);  // read, then zeroed
    for (uint32_t s : S[i]) b.touch(s, 1, 1);
    b.touch(t, 1, 1);
    b.duration(stream_ns(static_cast<double>((4 + 2 * c.optimizer_states) * wbytes)));
    b.free(t);
  }
  return b.finish("synthetic dnn: " + std::to_string(L) + " layers, width " + std::to_string(c.width) +
                  ", batch " + std::to_string(c.batch));
}

StepProfile random_profile(const RandomProfileConfig& c) {
  std::mt19937_64 rng(c.seed);
  auto uni = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  StepProfile p;
  p.period = std::max<uint32_t>(1, c.period);
  p.phases.resize(p.period);
  for (auto& ph : p.phases) ph.duration_ns = uni(1000, 2'000'000);
  p.profiled_steps = 1;
  p.sampler = "none";
  p.program = "random profile seed " + std::to_string(c.seed);
  for (uint32_t i = 0; i < c.objects; ++i) {
    ObjectProfile o;
    o.tag = (c.seed << 32) ^ (uint64_t{i} * 0x9E3779B97F4A7C15ull);
    o.size = uni(4096, std::max<uint64_t>(4096, c.max_size));
    if (chance(c.persistent_share)) {
      o.persistent = true;
      o.birth_phase = 0;
      o.death_phase = p.period - 1;
    } else {
      o.birth_phase = static_cast<uint32_t>(uni(0, p.period - 1));
      uint32_t life = chance(c.short_lived_share) ? static_cast<uint32_t>(uni(1, 3))
                                                  : static_cast<uint32_t>(uni(1, p.period));
      o.death_phase = o.birth_phase + life - 1;  // may exceed period: wraps into the next step
    }
    const uint32_t life = o.death_phase - o.birth_phase + 1;
    const uint32_t uses = static_cast<uint32_t>(uni(0, std::min<uint32_t>(life, 6)));
    std::map<uint32_t, PhaseAccess> acc;
    for (uint32_t u = 0; u < uses; ++u) {
      uint32_t phase = (o.birth_phase + static_cast<uint32_t>(uni(0, life - 1))) % p.period;
      auto& a = acc[phase];
      a.phase = phase;
      a.reads += uni(0, o.size / 64 * 4);
      a.writes += uni(0, o.size / 64);
    }
    for (auto& [ph, a] : acc) o.accesses.push_back(a);
    p.objects.push_back(std::move(o));
  }
  uint64_t peak = 0;
  for (uint32_t k = 0; k < p.period; ++k) {
    uint64_t live = 0;
    for (const auto& o : p.objects) {
      uint32_t off = (k + p.period - o.birth_phase) % p.period;
      if (o.persistent || off <= o.death_phase - o.birth_phase) live += o.size;
    }
    peak = std::max(peak, live);
  }
  p.peak_object_bytes = peak;
  for (const auto& ph : p.phases) p.step_time_ns += ph.duration_ns;
  return p;
}

}  // namespace sentinel
