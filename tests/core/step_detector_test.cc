#include "core/step_detector.h"
#include "step_program.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace sentinel {
namespace {

// A training step of `layers` identical layers: the same call-sites and sizes in every layer, as in an
// MLP of equal widths. Returns the number of allocation events per step.
uint32_t train_step(Program& prog, int layers, std::mt19937* noise = nullptr, double noise_rate = 0) {
  uint32_t events = 0;
  auto maybe_noise = [&] {
    if (noise != nullptr && std::uniform_real_distribution<>(0, 1)(*noise) < noise_rate) {
      prog.free(prog.alloc(0xdead0000 + (*noise)() % 7, 70000));
    }
  };
  auto a = [&](uint64_t site, uint64_t size) {
    maybe_noise();
    ++events;
    return prog.alloc(site, size);
  };
  const uint64_t input = a(1, 1 << 21);
  std::vector<uint64_t> acts;
  for (int l = 0; l < layers; ++l) {
    acts.push_back(a(10, 1 << 21));  // linear output
    acts.push_back(a(11, 1 << 21));  // relu output
  }
  const uint64_t loss = a(20, 65536);
  for (int l = layers - 1; l >= 0; --l) {
    const uint64_t grad_in = a(30, 1 << 21);
    const uint64_t grad_w = a(31, 4 << 20);
    prog.free(grad_w);  // accumulated into .grad, then dropped
    prog.free(grad_in);
    prog.free(acts.back());
    acts.pop_back();
    prog.free(acts.back());
    acts.pop_back();
  }
  prog.free(loss);
  prog.free(input);
  return events;
}

void startup(Program& prog) {
  for (int i = 0; i < 40; ++i) prog.alloc(500 + i % 3, 100000 + i);  // weights created at start-up
}

TEST(StepDetector, FindsTheStepNotTheLayerInANetworkOfIdenticalLayers) {
  Program prog;
  startup(prog);
  uint32_t per_step = 0;
  for (int s = 0; s < 6; ++s) per_step = train_step(prog, 8);
  prog.detector().finish();
  EXPECT_EQ(prog.detector().period(), per_step);
  EXPECT_EQ(prog.detector().complete_steps(), 6u);
  EXPECT_EQ(prog.detector().last_step_objects(), per_step);
  // Steps begin with the input batch, the first allocation after the low point of live memory.
  ASSERT_FALSE(prog.boundaries().empty());
  for (uint64_t b : prog.boundaries()) EXPECT_EQ((b - 40) % per_step, 0u) << b;
}

TEST(StepDetector, ToleratesStrayAllocations) {
  Program prog;
  std::mt19937 rng(42);
  startup(prog);
  for (int s = 0; s < 12; ++s) train_step(prog, 4, &rng, 0.03);
  prog.detector().finish();
  EXPECT_TRUE(prog.detector().locked());
  EXPECT_EQ(prog.detector().period(), 1u + 8 + 1 + 8);
  EXPECT_GE(prog.detector().complete_steps(), 11u);
  EXPECT_LE(prog.detector().complete_steps(), 12u);
}

TEST(StepDetector, CountsNothingWithoutRepetition) {
  Program prog;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3000; ++i) ids.push_back(prog.alloc(1000 + i, 65536));  // all different
  prog.detector().finish();
  EXPECT_FALSE(prog.detector().locked());
  EXPECT_EQ(prog.detector().complete_steps(), 0u);
  EXPECT_EQ(prog.detector().step_index(), -1);
}

// A second model with its own call-sites (sites + 100) is a new structure.
uint32_t other_model_step(Program& prog, int layers) {
  uint32_t events = 0;
  std::vector<uint64_t> acts;
  const uint64_t input = prog.alloc(101, 1 << 21);
  ++events;
  for (int l = 0; l < layers; ++l, ++events) acts.push_back(prog.alloc(110, 1 << 20));
  for (int l = 0; l < layers; ++l, ++events) {
    prog.free(prog.alloc(130, 1 << 20));
    prog.free(acts.back());
    acts.pop_back();
  }
  prog.free(input);
  return events;
}

TEST(StepDetector, ReDetectsWhenTheProgramChangesItsStep) {
  Program prog;
  startup(prog);
  for (int s = 0; s < 5; ++s) train_step(prog, 3);
  EXPECT_EQ(prog.detector().period(), 1u + 6 + 1 + 6);
  uint32_t per_step = 0;
  for (int s = 0; s < 24; ++s) per_step = other_model_step(prog, 12);
  prog.detector().finish();
  EXPECT_EQ(prog.detector().period(), per_step);
  EXPECT_GE(prog.detector().relocks(), 1u);
  // The history is recounted under the new structure: the steps of the new model are counted.
  EXPECT_GE(prog.detector().complete_steps(), 12u);
  EXPECT_LE(prog.detector().complete_steps(), 24u);
}

// A deeper network after a shallower one (a loop that runs more often) is the same step, longer.
TEST(StepDetector, AStepWhoseLoopRunsLongerIsTheSameStep) {
  Program prog;
  startup(prog);
  for (int s = 0; s < 5; ++s) train_step(prog, 3);
  for (int s = 0; s < 6; ++s) train_step(prog, 6);
  prog.detector().finish();
  EXPECT_EQ(prog.detector().relocks(), 0u);
  EXPECT_EQ(prog.detector().complete_steps(), 11u);
}

// An evaluation pass (forward only, several batches) after every third step: the steps are all counted,
// the structure is kept, and the evaluation events are off the cycle once they differ from the step.
TEST(StepDetector, EvaluationPassesAreOffCycleAndKeepTheStructure) {
  Program prog;
  startup(prog);
  uint64_t on = 0, off = 0;
  for (int s = 0; s < 12; ++s) {
    train_step(prog, 4);
    if (s % 3 == 2 && prog.detector().locked()) {
      for (int batch = 0; batch < 3; ++batch) {
        std::vector<uint64_t> acts;
        for (int l = 0; l < 4; ++l) {
          const uint64_t out = prog.alloc(10, 1 << 21);
          acts.push_back(prog.alloc(11, 1 << 21));
          prog.free(out);
        }
        const uint64_t pred = prog.alloc(40, 65536);  // argmax
        (prog.detector().on_cycle() ? on : off) += 1;
        prog.free(pred);
        for (uint64_t a : acts) prog.free(a);
      }
    }
  }
  prog.detector().finish();
  EXPECT_EQ(prog.detector().complete_steps(), 12u);
  EXPECT_EQ(prog.detector().relocks(), 0u);
  EXPECT_EQ(prog.detector().period(), 1u + 8 + 1 + 8);
  EXPECT_EQ(on, 0u);
  EXPECT_GT(off, 0u);
}

TEST(StepDetector, OnCycleWhileTheStepFollowsTheLearnedOne) {
  Program prog;
  startup(prog);
  for (int s = 0; s < 4; ++s) train_step(prog, 2);
  ASSERT_TRUE(prog.detector().locked());
  train_step(prog, 2);
  EXPECT_TRUE(prog.detector().on_cycle());
  prog.alloc(999, 70000);  // a stray allocation past the end of the step
  EXPECT_FALSE(prog.detector().on_cycle());
}

TEST(StepDetector, ExplicitMarksDefineSteps) {
  Program prog;
  startup(prog);
  for (int s = 0; s < 4; ++s) {
    prog.detector().mark_step();
    train_step(prog, 2);
  }
  prog.detector().finish();
  EXPECT_TRUE(prog.detector().explicit_marks());
  EXPECT_EQ(prog.detector().relocks(), 0u) << "marked from the start: no structure was replaced";
  EXPECT_EQ(prog.detector().complete_steps(), 4u);
  EXPECT_EQ(prog.detector().period(), 1u + 4 + 1 + 4);
  EXPECT_EQ(prog.boundaries(), (std::vector<uint64_t>{40, 50, 60, 70}));
}

// A program whose marks begin after the detector locked on something else (in the guest, import torch is
// long enough to be locked on): the switch to the marked steps is a new step structure, one re-detection,
// so that a profile or plan made on the detected one starts over.
TEST(StepDetector, FirstMarkAfterADetectedStructureCountsAsARedetection) {
  Program prog;
  startup(prog);
  for (int s = 0; s < 5; ++s) train_step(prog, 2);
  ASSERT_TRUE(prog.detector().locked());
  ASSERT_FALSE(prog.detector().explicit_marks());
  const uint64_t before = prog.detector().relocks();
  for (int s = 0; s < 3; ++s) {
    prog.detector().mark_step();
    train_step(prog, 2);
  }
  EXPECT_TRUE(prog.detector().explicit_marks());
  EXPECT_EQ(prog.detector().relocks(), before + 1) << "once, at the first mark";
}

TEST(StepDetector, StepClockPositionsRepeatEveryStep) {
  Program prog;
  startup(prog);
  int locked_steps = 0;
  for (int s = 0; s < 10; ++s) {
    const bool was_locked = prog.detector().locked();
    train_step(prog, 2);
    // Once locked, the last allocation of every step sits at the same position of the step clock.
    if (was_locked) {
      ++locked_steps;
      EXPECT_EQ(prog.detector().event_in_step(), prog.detector().period() - 1) << s;
    }
  }
  EXPECT_GE(locked_steps, 4);
}

// An MLP whose activations are all below the object threshold: its only objects are the weight gradients
// of its three equal layers, one call-site, one size, each freed (accumulated into .grad) before the next.
// Only the work before each tells where the step begins: the forward pass and the optimizer step before
// the first, one layer's backward before the others (with a little noise from the loop's own code).
TEST(StepDetector, TellsTheStepOfSameSizedGradientsByTheWorkBeforeEach) {
  Program prog;
  startup(prog);
  std::mt19937 rng(7);
  for (int s = 0; s < 40; ++s) {
    for (uint32_t work : {450u, 52u, 45u}) prog.free(prog.alloc(31, 589824, work + rng() % 4));
  }
  prog.detector().finish();
  EXPECT_EQ(prog.detector().period(), 3u);
  EXPECT_EQ(prog.detector().complete_steps(), 40u);
  // Steps begin at the gradient after the forward pass.
  ASSERT_FALSE(prog.boundaries().empty());
  for (uint64_t b : prog.boundaries()) EXPECT_EQ((b - 40) % 3, 0u) << b;
}

// The other side: a loop that allocates one tensor per iteration with the same work between is a step of
// one allocation. Without the work (small_before 0, as in traces recorded before it was measured) the MLP
// above looks the same, and is counted that way.
TEST(StepDetector, AFlatLoopOfOneTensorPerIterationHasPeriodOne) {
  for (uint32_t work : {0u, 40u}) {
    Program prog;
    startup(prog);
    std::mt19937 rng(7);
    for (int s = 0; s < 120; ++s) prog.free(prog.alloc(31, 589824, work == 0 ? 0 : work + rng() % 4));
    prog.detector().finish();
    EXPECT_EQ(prog.detector().period(), 1u) << work;
    EXPECT_GE(prog.detector().complete_steps(), 119u) << work;
  }
}

// A recurrent net: the forward time loop keeps each step's activation alive, the vocabulary head makes the
// peak of memory, and the backward time loop allocates two gradients per time step and frees them, with
// the count of live objects flat. That loop repeats exactly (period 2) long before the whole step has been
// seen twice, but it runs well below the forward's peak: it is not taken for the step.
TEST(StepDetector, DoesNotTakeTheBackwardTimeLoopForTheStep) {
  Program prog;
  startup(prog);
  constexpr int kTime = 60;
  uint32_t per_step = 0;
  for (int s = 0; s < 6; ++s) {
    per_step = 0;
    const uint64_t input = prog.alloc(1, 1 << 16, 300);
    std::vector<uint64_t> hidden;
    for (int i = 0; i < kTime; ++i, ++per_step) hidden.push_back(prog.alloc(10, 1 << 18, 20));
    const uint64_t logits = prog.alloc(20, 16 << 20, 40);
    prog.free(prog.alloc(21, 16 << 20, 900));  // loss gradient
    prog.free(logits);
    for (int i = 0; i < kTime; ++i, per_step += 2) {
      prog.free(prog.alloc(30, 1 << 18, 140));
      prog.free(prog.alloc(31, 1 << 18, 28));
    }
    for (uint64_t h : hidden) prog.free(h);
    prog.free(input);
    per_step += 3;
  }
  prog.detector().finish();
  EXPECT_EQ(prog.detector().period(), per_step);
  EXPECT_EQ(prog.detector().relocks(), 0u);
  EXPECT_EQ(prog.detector().complete_steps(), 6u);
}

struct RecordedTrace {
  const char* file;
  uint32_t period;
  uint64_t steps;
  // Steps started over at event 0 by the anchor after an incomplete stretch (an evaluation pass between two
  // training steps: the step it interrupts is counted once, see StepDetector::begins_step).
  uint64_t false_starts = 0;
  // Switches of structure, when the test checks them (-1: not checked): 0 where an inner loop must not
  // be taken for the step first.
  int64_t relocks = -1;
};

class StepDetectorRecorded : public ::testing::TestWithParam<RecordedTrace> {};

// Traces recorded with SENTINEL_TRACE from scripts/train.py runs of 6 steps each.
TEST_P(StepDetectorRecorded, FindsEveryStepOfARealTrainingRun) {
  const RecordedTrace& t = GetParam();
  std::ifstream in(std::string(SENTINEL_TEST_DATA) + "/" + t.file);
  ASSERT_TRUE(in) << t.file;
  auto d = std::make_unique<StepDetector>();
  uint64_t false_starts = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    uint64_t site, bytes, size;
    uint32_t objects;
    fields >> std::hex >> site >> std::dec >> objects >> bytes >> size;
    ASSERT_TRUE(fields) << line;
    uint32_t small_before = 0;  // a fifth column in traces recorded since it exists
    if (!(fields >> small_before)) small_before = 0;
    const int64_t step_before = d->step_index();
    const uint32_t event_before = d->event_in_step();
    d->observe(site, objects, bytes, size, small_before);
    // At the learned period, the step clock does not start a step over (event 0 again under the same step
    // number): the profiler and the plan executor place a step's objects by it.
    if (d->locked() && d->period() == t.period && step_before >= 0 && d->step_index() == step_before &&
        d->event_in_step() <= event_before) {
      ++false_starts;
    }
  }
  d->finish();
  EXPECT_EQ(d->period(), t.period);
  EXPECT_EQ(d->complete_steps(), t.steps);
  EXPECT_EQ(false_starts, t.false_starts);
  if (t.relocks >= 0) {
    EXPECT_EQ(d->relocks(), static_cast<uint64_t>(t.relocks));
  }
}

INSTANTIATE_TEST_SUITE_P(Traces, StepDetectorRecorded,
                         ::testing::Values(RecordedTrace{"mlp_6steps.trace", 67, 6},
                                           RecordedTrace{"cnn_6steps.trace", 50, 6},
                                           RecordedTrace{"transformer_6steps.trace", 114, 6},
                                           // Its backward pass has a loop over time steps that repeats
                                           // exactly, with period 5, before two steps are seen (below
                                           // the forward's peak of memory: not locked).
                                           RecordedTrace{"lstm_6steps.trace", 238, 6, 0, 0},
                                           // tests/torch/programs, 12 optimizer steps each (see there).
                                           RecordedTrace{"gru_lm_12steps.trace", 229, 12},
                                           RecordedTrace{"lstm3_lm_12steps.trace", 405, 12},
                                           RecordedTrace{"mlp_accum2_eval3_12steps.trace", 54, 12},
                                           RecordedTrace{"mlp_accum4_eval2_sgd_12steps.trace", 99, 12},
                                           // scripts/train.py --eval-every 2 --odd-batch-every 3: the
                                           // evaluation batch comes from the input's call-site.
                                           RecordedTrace{"mlp_eval2_odd3_12steps.trace", 49, 12, 3},
                                           RecordedTrace{"cnn_schedule_ckpt_12steps.trace", 47, 12},
                                           // Epochs of 100 samples in batches of 32: every fourth batch
                                           // has 4 samples, its input too small to be an object.
                                           RecordedTrace{"cnn_small_last_batch_12steps.trace", 47, 12},
                                           // Variable sequence length: the period is the length of
                                           // the step the detector locked on; other steps differ.
                                           RecordedTrace{"lstm_varlen_12steps.trace", 119, 12, 0, 0},
                                           RecordedTrace{"lstm_varlen_packed_12steps.trace", 169, 12},
                                           RecordedTrace{"gru_varlen_packed_12steps.trace", 127, 12},
                                           // bench/results/guest_step.py's lstm at SENTINEL_MIN_OBJECT=8K:
                                           // the event after the anchor recurs four events before the end.
                                           RecordedTrace{"lstm_small_8k_9steps.trace", 43, 9, 0, 0},
                                           // A residual CNN fed by a shuffling DataLoader, saving a
                                           // checkpoint into a BytesIO every 10 steps: one extra
                                           // allocation per 10 steps (60 steps).
                                           RecordedTrace{"cnn_ckpt_every10_60steps.trace", 41, 60},
                                           // tests/torch/programs/unet_segmentation.py --steps 48: a
                                           // validation pass every 4 steps, a checkpoint saved and loaded
                                           // back every 6. As "micro-batches", the step was replaced in
                                           // the 20th step by two steps plus the checkpoint's 25 loads
                                           // (verified by chance), and without that in the 30th by the
                                           // cycle of 12 steps and 5 passes (4,427 events).
                                           RecordedTrace{"unet_val4_ckpt6_48steps.trace", 331, 48, 0, 1},
                                           // bench/results/guest_step.py's mlp (scripts/train.py --batch 8
                                           // --width 384 --depth 3 --features 384) at SENTINEL_MIN_OBJECT=16K:
                                           // only the three weight gradients are objects, same call-site,
                                           // size and counts; the work before each tells the step apart.
                                           RecordedTrace{"mlp_b8_16k_60steps.trace", 3, 60, 0, 0},
                                           // tests/torch/programs/gru_lm.py at 16K: the backward time loop
                                           // (period 4) repeats exactly in the first step, below the
                                           // forward's peak of memory, and must not be locked first.
                                           RecordedTrace{"gru_lm_16k_12steps.trace", 349, 12, 0, 0},
                                           // scripts/train.py --model mlp --batch 4 --width 512 --depth 6
                                           // --features 512 at 64K: six weight gradients in a row from one
                                           // call-site, more than the four positions kept per site.
                                           RecordedTrace{"mlp_b4_d6_64k_60steps.trace", 6, 60, 0, 0},
                                           // bench/results/guest_step.py --host: mlp-adam at 16K, Adam's
                                           // two temporaries per weight after the gradients (29: as before
                                           // this change); gru-lm at 16K, whose step ends with the
                                           // embedding's gradient, at the same live bytes as its start.
                                           RecordedTrace{"guest_mlp_adam_16k_30steps.trace", 9, 29, 0, 0},
                                           RecordedTrace{"guest_gru_lm_16k_30steps.trace", 22, 30, 0, 0},
                                           // A genuinely short step: a 2-layer GRU classifier (batch 8,
                                           // 20 time steps, hidden 64, Adam) at 64K, whose only objects
                                           // are four gate buffers per step, after a start-up temporary a
                                           // little above them (spans_the_swing must not reject it).
                                           RecordedTrace{"gru_cls_64k_30steps.trace", 4, 30, 0, 0},
                                           // GPT-2 (transformers) in torch.compile on PyTorch 2.x, recorded
                                           // before call-sites ended at the interpreter's frames: the compiled
                                           // forward's and backward's call-sites change once, at step 7; the
                                           // step is kept (one switch, to the same length).
                                           RecordedTrace{"gpt2_compiled_16steps.trace", 68, 16, 0, 1}));

}  // namespace
}  // namespace sentinel
