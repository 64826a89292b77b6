// Step graphs of the CUDA backend (CUDA graphs; built with ARACH_TEST_CUDA_SIM, the simulated backend, which
// records a step's kernel launches with their arguments and replays them, as a CUDA graph keeps its kernels'
// parameters): decode steps replayed from a recording give the logits of steps run op by op (exactly on the
// simulator; on a GPU within the reduced-precision tolerance, FlashInfer's graph schedule splitting the KV its own
// way), for every variant in one batch, while the block tables grow across KV blocks and sequences finish (new
// shapes are recorded, old ones replayed); and batches padded to their batch-size bucket, their hub and skip rows
// to theirs, replay a graph per bucketed shape as their mix of variants changes.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/kv/block_allocator.h"
#include "engine/runner/offline_session.h"
#include "engine/sampling/sampling_params.h"
#include "gtest/gtest.h"
#include "tests/testing/devices.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/reduced_precision.h"
#include "tests/testing/temp_dir.h"
#include "tools/make_model/make_model.h"

namespace arach {
namespace {

// A GPU where the suite runs on one (the simulator needs none), and the fixtures.
#if defined(ARACH_TEST_CUDA_SIM)
#define ARACH_REQUIRE_DEVICE_AND_FIXTURES() ARACH_REQUIRE_FIXTURES()
#else
#define ARACH_REQUIRE_DEVICE_AND_FIXTURES() \
  ARACH_REQUIRE_GPU();                      \
  ARACH_REQUIRE_FIXTURES()
#endif

// block_size 1 by default: block tables that outgrow their 64-byte slot of the step's upload as the steps go.
std::unique_ptr<ModelRunner> CudaRunner(const std::string& model, bool step_graphs, int block_size = 1) {
  testing::FixtureOptions options;
  options.adapter = true;
  options.block_size = block_size;
  options.device = DeviceKind::kCuda;
#if defined(ARACH_TEST_CUDA_SIM)
  options.make_backend = testing::CreateSimulatedCudaBackendFor;
#endif
  auto runner = testing::LoadFixtureRunner(model, options);
  EXPECT_TRUE(runner.ok()) << runner.status();
  if (!runner.ok()) return nullptr;
  (*runner)->set_step_graphs(step_graphs);
  return std::move(*runner);
}

// The logits of every position, one token per sequence and step (decode-shaped steps).
std::vector<std::vector<float>> LogitsTokenByToken(ModelRunner& runner, const std::vector<std::vector<int32_t>>& sequences,
                                                   const std::vector<Variant>& variants) {
  std::vector<std::vector<float>> logits(sequences.size());
  OfflineSession session(runner);
  const absl::Status status = session.ForEachPosition(
      sequences, /*chunk=*/1,
      [&](int seq, int /*position*/, std::span<const float> row) { logits[seq].insert(logits[seq].end(), row.begin(), row.end()); },
      variants);
  EXPECT_TRUE(status.ok()) << status;
  return logits;
}

// Block tables of `count` sequences, each holding `positions` tokens of the runner's KV pool.
struct SequenceTables {
  SequenceTables(ModelRunner& runner, int count, int positions)
      : allocator(runner.kv_cache().num_blocks()), tables(count, BlockTable(runner.kv_cache().block_size())) {
    for (BlockTable& table : tables) EXPECT_TRUE(table.Reserve(positions, allocator).ok());
  }
  BlockAllocator allocator;
  std::vector<BlockTable> tables;
};

// The logits of replayed (and padded) steps against those of steps run op by op: equal on the simulator; on a GPU
// within the reduced-precision tolerance, FlashInfer's schedule for graphs splitting the KV differently (the same
// sums in another order).
void ExpectLogitsOfStepsRunOpByOp(const std::vector<std::vector<float>>& with_graphs,
                                  const std::vector<std::vector<float>>& without, const std::string& label) {
  ASSERT_EQ(with_graphs.size(), without.size()) << label;
  for (size_t s = 0; s < with_graphs.size(); ++s) {
    ASSERT_EQ(with_graphs[s].size(), without[s].size()) << label << ": sequence " << s;
#if defined(ARACH_TEST_CUDA_SIM)
    EXPECT_EQ(with_graphs[s], without[s]) << label << ": sequence " << s << " differs when replayed";
#else
    for (size_t i = 0; i < with_graphs[s].size(); ++i) {
      ASSERT_NEAR(with_graphs[s][i], without[s][i], testing::kReducedPrecisionLogitTolerance)
          << label << ": sequence " << s << " value " << i;
    }
#endif
  }
}

TEST(StepGraphs, ReplayedDecodeStepsGiveTheLogitsOfStepsRunOpByOp) {
  ARACH_REQUIRE_DEVICE_AND_FIXTURES();
  for (const char* model : {"gpt2-tiny"}) {
    std::unique_ptr<ModelRunner> recorded = CudaRunner(model, true), plain = CudaRunner(model, false);
    ASSERT_NE(recorded, nullptr);
    ASSERT_NE(plain, nullptr);
    // Four variants, lengths that add KV blocks every other step and end at different steps.
    std::vector<std::vector<int32_t>> sequences;
    for (int s = 0; s < 4; ++s) {
      std::vector<int32_t> ids;
      for (int t = 0; t < 10 + 5 * s; ++t) ids.push_back(static_cast<int32_t>((31 * t + 17 * s + 3) % 250 + 5));
      sequences.push_back(ids);
    }
    std::vector<Variant> variants(4);
    variants[1].arach = true;
    variants[2].skip = true;
    variants[3].arach = variants[3].skip = true;
    ExpectLogitsOfStepsRunOpByOp(LogitsTokenByToken(*recorded, sequences, variants),
                                 LogitsTokenByToken(*plain, sequences, variants), model);
    // Shapes: 4 sequences (3 padded to 4: one shape), 2 and 1 for 15, 5 and 5 steps; each recorded on its second
    // step (again where the growing block tables moved the step's upload to a larger buffer).
    EXPECT_GE(recorded->step_graph_stats().recorded, 3) << model;
    EXPECT_LE(recorded->step_graph_stats().recorded, 8) << model;
    EXPECT_GE(recorded->step_graph_stats().replayed, 12) << model;
    EXPECT_EQ(plain->step_graph_stats().recorded, 0) << model;
  }
}

#if !defined(ARACH_TEST_CUDA_SIM)
// 7 query heads per KV head of 64 (Qwen2.5-0.5B's attention; make-model's qwen2/gqa7, random weights): FlashInfer's
// decode kernel has no such group, so decode steps run on its prefill kernels, graph-mode plans included, and with
// the hub packed, 14 query heads per KV head. GPU only: the simulator's stand-in for FlashInfer has one path for
// both kernels.
TEST(StepGraphs, DecodeStepsOfAGroupFlashInfersDecodeKernelLacksReplayOnItsPrefillKernels) {
  ARACH_REQUIRE_GPU();
  testing::ScopedTempDir dir;
  MakeModelOptions make;
  make.arch = "qwen2";
  make.preset = "gqa7";
  make.out_dir = dir.path();
  make.seed = 7;
  make.dtype = "BF16";
  ASSERT_TRUE(MakeModel(make).ok());
  auto runner = [&](bool step_graphs) {
    testing::FixtureOptions options;
    options.model_dir = dir.path();
    options.reference_hub = false;  // derived from the embeddings
    options.block_size = 16;
    options.device = DeviceKind::kCuda;
    auto made = testing::LoadFixtureRunner("qwen2-gqa7", options);
    EXPECT_TRUE(made.ok()) << made.status();
    if (made.ok()) (*made)->set_step_graphs(step_graphs);
    return made.ok() ? std::move(*made) : nullptr;
  };
  std::unique_ptr<ModelRunner> recorded = runner(true), plain = runner(false);
  ASSERT_NE(recorded, nullptr);
  ASSERT_NE(plain, nullptr);
  std::vector<std::vector<int32_t>> sequences;
  for (int s = 0; s < 5; ++s) {
    std::vector<int32_t> ids;
    for (int t = 0; t < 20 + 7 * s; ++t) ids.push_back(static_cast<int32_t>((37 * t + 11 * s + 1) % 1000 + 3));
    sequences.push_back(ids);
  }
  std::vector<Variant> variants(5);
  for (int s = 1; s < 5; s += 2) variants[s].arach = true;
  ExpectLogitsOfStepsRunOpByOp(LogitsTokenByToken(*recorded, sequences, variants), LogitsTokenByToken(*plain, sequences, variants),
                               "qwen2/gqa7");
  EXPECT_GE(recorded->step_graph_stats().replayed, 20);
}
#endif

TEST(StepGraphs, DecodeBatchesReplayAGraphPerBucketOfSequencesHubRowsAndSkipRows) {
  ARACH_REQUIRE_DEVICE_AND_FIXTURES();
  std::unique_ptr<ModelRunner> recorded = CudaRunner("gpt2-tiny", true, 16), plain = CudaRunner("gpt2-tiny", false, 16);
  ASSERT_NE(recorded, nullptr);
  ASSERT_NE(plain, nullptr);
  // 8 sequences for 4 steps, then 7, 6 and 5 for two steps each (padded to 8 with sequences writing the padding
  // block, not these sequences' KV), then 4 for 4 steps: two batch sizes, 8 and 4.
  std::vector<std::vector<int32_t>> sequences;
  for (int length : {14, 14, 14, 14, 10, 8, 6, 4}) {  // the first sequences live longest (their KV is read throughout)
    std::vector<int32_t> ids;
    for (int t = 0; t < length; ++t) ids.push_back(static_cast<int32_t>((29 * t + 13 * sequences.size() + 7) % 250 + 5));
    sequences.push_back(ids);
  }
  // An A/B mix: as the last four sequences finish, the batch's counts of ARACH and adapter sequences change at every
  // step where one leaves (the four that stay run all four variants).
  const Variant base, arach{.arach = true}, skip{.skip = true}, both{.arach = true, .skip = true};
  const std::vector<Variant> variants = {both, base, arach, skip, arach, skip, both, arach};
  ExpectLogitsOfStepsRunOpByOp(LogitsTokenByToken(*recorded, sequences, variants),
                               LogitsTokenByToken(*plain, sequences, variants), "padded to buckets");
  // Shapes (sequences, hub rows, skip rows) with bucketed rows: 8 sequences, 5 ARACH filled up to 8 hub rows by
  // sequences 1, 3 and 5, so that the 4 with the adapter all have hub rows: (8, 8, 8) for 4 steps; 7 (4 ARACH; 4
  // with the adapter, 2 of them with hub rows): (8, 4, 8) for 2; 6 and 5 (3 ARACH filled up to 4 by sequence 1;
  // adapter rows 3 + 1, then 2 + 1): (8, 4, 4) for 4; 4 (2 ARACH; adapter rows 2 + 1): (4, 2, 4) for 4. Each is
  // recorded on its second step and replayed after: 4 recorded, 6 replayed.
  // (Exact counts would record a shape at almost every step where a sequence left; hub and skip rows for every
  // sequence, 2 recorded and 10 replayed, at the price of the base sequences' hub rows in every GEMM.)
  EXPECT_EQ(recorded->step_graph_stats().recorded, 4);
  EXPECT_EQ(recorded->step_graph_stats().replayed, 6);
}

TEST(StepGraphs, SequencesAskingForTheirLogitsBesideTheSampledTokenKeepTheGraph) {
  ARACH_REQUIRE_DEVICE_AND_FIXTURES();
  std::unique_ptr<ModelRunner> recorded = CudaRunner("gpt2-tiny", true, 16), plain = CudaRunner("gpt2-tiny", false, 16);
  ASSERT_NE(recorded, nullptr);
  ASSERT_NE(plain, nullptr);
  ASSERT_TRUE(recorded->samples_on_device());
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  SamplerInput sample;
  sample.params = &greedy;
  const int32_t token[] = {42};
  constexpr int kSequences = 4;  // a bucket: no padding sequences
  SequenceTables recorded_tables(*recorded, kSequences, 16), plain_tables(*plain, kSequences, 16);
  // Every sequence sampled on the device; the first `returned` also return their logits (as a request asking for
  // log-probs does), a number that changes from step to step.
  const auto step = [&](ModelRunner& runner, SequenceTables& t, int position, int returned) {
    ForwardBatch batch;
    for (int s = 0; s < kSequences; ++s) {
      SequenceInput seq;
      seq.tokens = token;
      seq.start_position = position;
      seq.block_table = &t.tables[s];
      seq.logits = s < returned ? LogitsMode::kLast : LogitsMode::kNone;
      seq.sample = &sample;
      batch.sequences.push_back(seq);
    }
    ForwardOutput out;
    const absl::Status executed = runner.Execute(batch, out);
    EXPECT_TRUE(executed.ok()) << executed;
    return executed.ok() ? out : ForwardOutput{};
  };
  const int returned_per_step[] = {0, 1, 2, 3, 1, 2, 3, 1};
  for (int position = 0; position < 8; ++position) {
    const int returned = returned_per_step[position];
    const ForwardOutput with_graphs = step(*recorded, recorded_tables, position, returned);
    const ForwardOutput without = step(*plain, plain_tables, position, returned);
    const std::string label = absl::StrCat("step ", position, ", ", returned, " returned");
    EXPECT_EQ(with_graphs.sampled_tokens, without.sampled_tokens) << label;
    EXPECT_EQ(with_graphs.row_start, without.row_start) << label;
    ExpectLogitsOfStepsRunOpByOp({{with_graphs.logits.begin(), with_graphs.logits.end()}},
                                 {{without.logits.begin(), without.logits.end()}}, label);
  }
  // Logit rows one per sequence (step 0) or two (the others, whatever the count returned): the second shape is
  // recorded on its second step and replayed on the 5 after (one graph per count returned would record 3).
  EXPECT_EQ(recorded->step_graph_stats().recorded, 1);
  EXPECT_EQ(recorded->step_graph_stats().replayed, 5);
}

TEST(StepGraphs, AtTheLimitTheLeastRecentlyReplayedShapeMakesRoom) {
  ARACH_REQUIRE_DEVICE_AND_FIXTURES();
  std::unique_ptr<ModelRunner> runner = CudaRunner("gpt2-tiny", true, 16);
  ASSERT_NE(runner, nullptr);
  runner->set_max_step_graphs(2);
  SequenceTables kv(*runner, 4, 32);
  std::vector<BlockTable>& tables = kv.tables;
  std::vector<int> next_position(tables.size(), 0);
  const int32_t token[] = {42};
  // One decode step of the first `n` sequences (batch sizes 1, 2 and 4 are three shapes).
  const auto step = [&](int n) {
    ForwardBatch batch;
    for (int s = 0; s < n; ++s) {
      SequenceInput seq;
      seq.tokens = token;
      seq.start_position = next_position[s]++;
      seq.block_table = &tables[s];
      batch.sequences.push_back(seq);
    }
    ForwardOutput out;
    ASSERT_TRUE(runner->Execute(batch, out).ok());
  };
  const auto recorded = [&] { return runner->step_graph_stats().recorded; };
  const auto replayed = [&] { return runner->step_graph_stats().replayed; };
  step(4);  // shape C runs first, sizing the scratch for all three (a graph is dropped when its scratch moves)
  step(1), step(1);  // shape A: run, then recorded
  step(2), step(2);  // shape B: run, then recorded (2 kept: the limit)
  ASSERT_EQ(recorded(), 2);
  step(1);  // A replayed: now B is the least recently used
  EXPECT_EQ(replayed(), 1);
  step(4);  // C, seen before: recorded, and B makes room
  EXPECT_EQ(recorded(), 3);
  step(1);  // A was kept: replayed, not recorded again
  EXPECT_EQ(recorded(), 3);
  EXPECT_EQ(replayed(), 2);
  step(2);  // B was dropped: recorded again (it has run before)
  EXPECT_EQ(recorded(), 4);
  EXPECT_EQ(replayed(), 2);
}

}  // namespace
}  // namespace arach
