// The step detector on the shapes of event stream that public models produce (docs/step-detection.md,
// "Models people train"): a vision transformer whose step is longer than 4,096 events, most of them runs of
// one scratch buffer, and a torch.compile'd model whose call-sites change once a few steps in.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/step_detector.h"
#include "recorded_trace.h"
#include "step_program.h"

namespace sentinel {
namespace {

void startup(Program& prog) {
  for (int i = 0; i < 40; ++i) prog.alloc(500 + i % 3, 100000 + i);  // weights created at start-up
}

// One training step of ViT-B/16 as Debian's PyTorch 1.13 runs it at 128 px and more (recorded with
// SENTINEL_TRACE, tests/torch/programs/zoo.py --arch vit_b_16 --size 128 --batch 4): each batched matmul of
// attention (two per layer forward, four backward) takes a 512 KiB scratch buffer per matrix, batch x heads
// of them, each freed before the next, after the same few small requests: runs of identical events, 80% of
// the step. Each run verifies as a period of 1 and memory is still rising in the forward pass, so a run is
// locked first; the whole step (6 * layers * matrices events and more) must replace it. Returns the events of
// the step.
uint32_t vit_step(Program& prog, int layers, int matrices) {
  uint32_t events = 0;
  auto a = [&](uint64_t site, uint64_t size, uint32_t work) {
    ++events;
    return prog.alloc(site, size, work);
  };
  auto scratch = [&](uint64_t site) {
    for (int m = 0; m < matrices; ++m) prog.free(a(site, 524288, m == 0 ? 9 : 6));
  };
  const uint64_t input = a(1, 786432, 60);
  std::vector<uint64_t> kept{a(2, 798720, 30)};  // patch embedding
  for (int l = 0; l < layers; ++l) {
    kept.push_back(a(10, 798720, 12));   // layer norm
    kept.push_back(a(11, 2396160, 20));  // q, k, v
    scratch(40);                         // q @ k^T
    kept.push_back(a(12, 3194880, 13));  // attention weights
    scratch(41);                         // weights @ v
    kept.push_back(a(13, 798720, 15));   // out projection
    kept.push_back(a(14, 3194880, 41));  // MLP hidden
    kept.push_back(a(15, 798720, 82));   // MLP out, residual
  }
  const uint64_t logits = a(3, 307200, 47);
  prog.free(a(4, 307200, 900));  // gradient of the loss
  prog.free(logits);
  for (int l = layers - 1; l >= 0; --l) {
    prog.free(a(50, 3194880, 23));  // MLP gradients
    prog.free(a(51, 798720, 24));
    scratch(60);  // the four matmuls of attention's backward
    scratch(61);
    prog.free(a(52, 2396160, 34));
    scratch(62);
    scratch(62);
    for (int k = 0; k < 6; ++k) {
      prog.free(kept.back());
      kept.pop_back();
    }
  }
  prog.free(kept.back());
  for (int k = 0; k < 8; ++k) prog.free(a(70, 2359296, 20));  // SGD's momentum and weight-decay temporaries
  prog.free(input);
  return events;
}

// `steps` ViT steps of `matrices` scratch buffers per attention matmul: the detector must lock the whole step
// (every step counted, the last boundary on a step start) by the end of step `locked_by`.
void expect_vit_found(int matrices, int steps, uint32_t locked_by) {
  Program prog;
  startup(prog);
  uint32_t per_step = 0;
  for (int s = 0; s < steps; ++s) per_step = vit_step(prog, 12, matrices);
  ASSERT_GT(per_step, 4096u);  // longer than the longest step the detector used to take
  ASSERT_LE(per_step, StepDetector::kMaxPeriod);
  prog.detector().finish();
  EXPECT_EQ(prog.detector().period(), per_step);
  EXPECT_EQ(prog.detector().complete_steps(), static_cast<uint64_t>(steps));
  EXPECT_LT(prog.detector().lock_event(), 40 + locked_by * per_step);
  ASSERT_FALSE(prog.boundaries().empty());
  EXPECT_EQ((prog.boundaries().back() - 40) % per_step, 0u);
}

// 64 matrices: 4,728 events per step, 97% of them scratch buffers. The whole step replaces the runs of
// scratch buffers by the third step.
TEST(StepDetectorModels, FindsAVisionTransformerStepOfRunsOfScratchBuffers) { expect_vit_found(64, 5, 3); }

// Batch 16 x 12 heads: 192 matrices, 13,944 events per step, 99% of them scratch buffers. A period a few
// events short verifies too (it mismatches only where runs end): SGD's eight temporaries at the end of the
// step propose 13,937 from the first of them in the next step, and it verified before the step did.
TEST(StepDetectorModels, FindsAVisionTransformerStepOfLongerRunsOfScratchBuffers) { expect_vit_found(192, 6, 4); }

// ViT-B/16 at batch 16, 128 px, on Debian's PyTorch 1.13, as recorded (tests/core/data/
// vit_b16_batch16_last32768.trace: `zoo.py --arch vit_b_16 --size 128 --batch 16 --steps 5` with SENTINEL_TRACE,
// which keeps the detector's history, the last 32,768 events) and then continued by its last step three times
// (the recorded steps repeat exactly). A step of 14,606 events, 95% of them runs of 192 scratch buffers, each
// run locked as a period of 1 in turn, about every 200 events. The step takes 457 events to verify, and every
// lock used to end the periods in verification: the detector stayed at a period of 1 for the whole run.
TEST(StepDetectorModels, FindsViTB16AtBatch16WhoseRunsLockInTurnFasterThanItsStepVerifies) {
  std::vector<testing::TraceEvent> events = testing::load_trace("vit_b16_batch16_last32768.trace");
  constexpr uint32_t kStep = 14606;
  ASSERT_EQ(events.size(), size_t{StepDetector::kHistory});
  const std::vector<testing::TraceEvent> last_step(events.end() - kStep, events.end());
  for (int repeat = 0; repeat < 3; ++repeat) events.insert(events.end(), last_step.begin(), last_step.end());
  auto d = std::make_unique<StepDetector>();
  for (const testing::TraceEvent& e : events) d->observe(e.site, e.objects, e.bytes, e.size, e.small_before);
  d->finish();
  EXPECT_EQ(d->period(), kStep);
  EXPECT_LT(d->lock_event(), StepDetector::kHistory + kStep);  // within the first repeated step
  EXPECT_GE(d->complete_steps(), 4u);
}

// A model wrapped in torch.compile, as its allocations reach the runtime (tests/core/data/
// gpt2_compiled_16steps.trace): the compiled forward's buffers come from one call-site (torch.empty_strided
// in the generated wrapper), the backward's from another, AdamW's from two more, 68 events in all. After a
// few steps the forward's and the backward's call-sites change once (CPython specialised the calls in the
// wrapper; core/call_site.h now ends a call-site at the interpreter's frames, but any such change must not
// cost steps): two steps under the new call-sites verify first (a period equal to the locked one is never
// proposed); the detector must keep the step's length and every step counted.
void compiled_step(Program& prog, uint64_t forward, uint64_t backward) {
  std::vector<uint64_t> saved;
  saved.push_back(prog.alloc(forward, 262144, 241));
  for (int k = 1; k < 22; ++k) {
    saved.push_back(prog.alloc(forward, k % 4 == 0 ? 1048576 : 262144, 3 + k % 5));
    if (k == 5 || k == 17) prog.free(prog.alloc(9, 262144, 10));  // a kernel's own buffer
  }
  std::vector<uint64_t> grads;  // the parameters' gradients, alive until the next step's zero_grad()
  for (int k = 0; k < 15; ++k) {
    grads.push_back(prog.alloc(backward, k == 0 ? 4096000 : 262144, k == 0 ? 313 : 13));
    if (k < 11) {
      prog.free(prog.alloc(7, 262144, 22));  // an input gradient
      prog.free(saved.back());
      saved.pop_back();
    }
  }
  for (uint64_t s : saved) prog.free(s);
  for (int k = 0; k < 9; ++k) {  // AdamW, one parameter at a time
    const uint64_t u = prog.alloc(20, 262144, k == 0 ? 960 : 179);
    prog.free(prog.alloc(21, 262144, 11));
    prog.free(u);
  }
  for (uint64_t g : grads) prog.free(g);
}

TEST(StepDetectorModels, KeepsTheStepWhenItsCallSitesChangeOnce) {
  Program prog;
  startup(prog);
  constexpr int kSteps = 16;
  uint64_t step_events = 0;
  for (int s = 0; s < kSteps; ++s) {
    const uint64_t before = prog.events();
    if (s < 7) {
      compiled_step(prog, 100, 200);
    } else {
      compiled_step(prog, 101, 201);  // specialised: new return addresses in the caller's frames
    }
    step_events = prog.events() - before;
  }
  prog.detector().finish();
  ASSERT_EQ(step_events, 68u);
  EXPECT_EQ(prog.detector().period(), step_events);
  EXPECT_EQ(prog.detector().complete_steps(), uint64_t{kSteps});
  EXPECT_EQ(prog.detector().relocks(), 1u);
  EXPECT_TRUE(prog.detector().on_cycle());
}

}  // namespace
}  // namespace sentinel
