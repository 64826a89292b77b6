// LoRA adapters served per request (engine/model/lora_adapter.h) against their reference: the same adapter merged
// into the model's weights in the checkpoint's own layout (tests/testing/lora_folders.h). On every fixture family
// (GPT-2's Conv1D, NeoX's interleaved QKV, Llama's GQA, Qwen2's biases, Qwen3's q/k norms), under every variant,
// alone and batched with other adapters and the base model, and with the prefix cache kept apart per adapter.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <thread>

#include "engine/core/byte_size.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/lora_folders.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using testing::CollectingObserver;

struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;  // the generated tokens' (raw model)
  std::vector<float> prompt_logprobs;
  int cached_prompt_tokens = 0;
};

EngineRequest Greedy(const std::vector<int32_t>& prompt, const std::string& lora, const Variant& variant = {}) {
  EngineRequest request;
  request.prompt = prompt;
  request.lora = lora;
  request.variant = variant;
  request.sampling.temperature = 0;
  request.sampling.max_tokens = 12;
  request.sampling.ignore_eos = true;
  request.sampling.logprobs = true;
  request.sampling.prompt_logprobs = true;
  return request;
}

Outcome Collect(CollectingObserver& observer) {
  EXPECT_TRUE(observer.Wait());
  Outcome outcome;
  outcome.tokens = observer.tokens();
  for (const StreamChunk& chunk : observer.chunks()) {
    for (const SampledToken& t : chunk.tokens) outcome.logprobs.push_back(t.logprob);
  }
  const FinishInfo finish = observer.finish();
  EXPECT_TRUE(finish.status.ok()) << finish.status;
  outcome.prompt_logprobs = finish.prompt_logprobs;
  outcome.cached_prompt_tokens = finish.usage.cached_prompt_tokens;
  return outcome;
}

// Runs `requests` submitted together (the engine batches them) and returns each outcome.
std::vector<Outcome> RunTogether(Engine& engine, const std::vector<EngineRequest>& requests) {
  std::vector<std::shared_ptr<CollectingObserver>> observers;
  for (const EngineRequest& request : requests) {
    observers.push_back(std::make_shared<CollectingObserver>());
    const absl::StatusOr<uint64_t> id = engine.Submit(request, observers.back());
    EXPECT_TRUE(id.ok()) << id.status();
  }
  std::vector<Outcome> outcomes;
  for (auto& observer : observers) outcomes.push_back(Collect(*observer));
  return outcomes;
}

float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

void ExpectSame(const Outcome& got, const Outcome& want, float tolerance, const std::string& what) {
  EXPECT_EQ(got.tokens, want.tokens) << what;
  EXPECT_LT(MaxDiff(got.prompt_logprobs, want.prompt_logprobs), tolerance) << what;
  EXPECT_LT(MaxDiff(got.logprobs, want.logprobs), tolerance) << what;
}

std::vector<int32_t> Prompt(const Engine& engine, int length, int shift) {
  std::vector<int32_t> ids = testing::ValidationTokens(engine.tokenizer());
  return std::vector<int32_t>(ids.begin() + shift, ids.begin() + shift + length);
}

Variant MakeVariant(bool arach, bool skip) {
  Variant v;
  v.arach = arach;
  v.skip = skip;
  return v;
}

class LoraConformance : public ::testing::TestWithParam<std::string> {};

// Every projection of every layer adapted: serving the adapter equals serving the merged model, under the four
// variants (ARACH's hub rows and the skip adapter's rows run through the LoRA too), and differs from the base model.
TEST_P(LoraConformance, EqualsTheMergedModelUnderEveryVariant) {
  ARACH_REQUIRE_FIXTURES();
  const std::string model = GetParam();
  testing::ScopedTempDir dir;
  testing::RandomLora lora;
  lora.modules = testing::LoraTargetModules(testing::FixturePath(model));
  ASSERT_GE(lora.modules.size(), 8u);
  lora.use_rslora = model == "qwen2-tiny";  // the other scale rule on one family
  testing::WriteRandomLora(testing::FixturePath(model), lora, dir.File("lora"));
  testing::WriteMergedModel(testing::FixturePath(model), dir.File("lora"), dir.File("merged"));

  std::unique_ptr<Engine> served = testing::MakeFixtureEngine(model, {}, 256, "", {{"tuned", dir.File("lora")}});
  std::unique_ptr<Engine> merged = testing::MakeFixtureEngine(model, {}, 256, dir.File("merged"));
  ASSERT_NE(served, nullptr);
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(served->lora_names(), std::vector<std::string>{"tuned"});
  const std::vector<int32_t> prompt = Prompt(*served, 37, 0);
  for (const auto& [arach, skip] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    const Variant variant = MakeVariant(arach, skip);
    const std::string what = model + " " + variant.Name();
    const Outcome with_lora = RunTogether(*served, {Greedy(prompt, "tuned", variant)})[0];
    const Outcome reference = RunTogether(*merged, {Greedy(prompt, "", variant)})[0];
    ExpectSame(with_lora, reference, 2e-3f, what);
    const Outcome base = RunTogether(*served, {Greedy(prompt, "", variant)})[0];
    EXPECT_GT(MaxDiff(with_lora.prompt_logprobs, base.prompt_logprobs), 0.05f) << what << ": the adapter changes nothing";
  }
}

INSTANTIATE_TEST_SUITE_P(Families, LoraConformance,
                         ::testing::Values("gpt2-tiny", "neox-tiny", "llama3-tiny", "qwen2-tiny", "qwen3-tiny"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) if (c == '-') c = '_';
                           return name;
                         });

// Two adapters (PEFT's default targets on one, the MLP on the other) and the base model in one batch, prompts of
// different lengths, give what each gives alone; the first adapter's prefix-cache blocks serve only it.
TEST(LoraBatches, AdaptersAndTheBaseModelTogetherEqualAlone) {
  ARACH_REQUIRE_FIXTURES();
  const std::string model = "llama3-tiny";
  testing::ScopedTempDir dir;
  std::vector<std::string> attention, mlp;
  for (const std::string& m : testing::LoraTargetModules(testing::FixturePath(model))) {
    (m.find("q_proj") != std::string::npos || m.find("v_proj") != std::string::npos ? attention : mlp).push_back(m);
  }
  testing::RandomLora first{attention, 8, 16, false, 11};
  testing::RandomLora second{mlp, 2, 4, false, 12};
  testing::WriteRandomLora(testing::FixturePath(model), first, dir.File("first"));
  testing::WriteRandomLora(testing::FixturePath(model), second, dir.File("second"));
  EngineConfig config;
  config.enable_prefix_caching = true;
  std::unique_ptr<Engine> engine =
      testing::MakeFixtureEngine(model, config, 256, "", {{"first", dir.File("first")}, {"second", dir.File("second")}});
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> a = Prompt(*engine, 40, 0), b = Prompt(*engine, 23, 100), c = Prompt(*engine, 33, 200);
  const Variant arach = MakeVariant(true, false);
  const std::vector<EngineRequest> requests = {Greedy(a, "first"), Greedy(b, "second", arach), Greedy(c, ""),
                                               Greedy(b, "first", arach), Greedy(a, "second")};
  std::vector<Outcome> alone;
  for (const EngineRequest& request : requests) alone.push_back(RunTogether(*engine, {request})[0]);
  const std::vector<Outcome> together = RunTogether(*engine, requests);
  for (size_t i = 0; i < requests.size(); ++i) ExpectSame(together[i], alone[i], 1e-4f, "request " + std::to_string(i));
  EXPECT_NE(alone[0].tokens, alone[4].tokens);  // the same prompt, two adapters

  // The prefix cache (requests without prompt log-probs, which are computed in full): a prompt computed under
  // "first" is found under "first" again, not under the base model or "second" (their K/V differ).
  const auto cacheable = [](EngineRequest request) {
    request.sampling.prompt_logprobs = false;
    return request;
  };
  const std::vector<int32_t> d = Prompt(*engine, 50, 300);
  const Outcome first_d = RunTogether(*engine, {cacheable(Greedy(d, "first"))})[0];
  EXPECT_EQ(first_d.cached_prompt_tokens, 0);
  const Outcome first_again = RunTogether(*engine, {cacheable(Greedy(d, "first"))})[0];
  EXPECT_GT(first_again.cached_prompt_tokens, 0);
  EXPECT_EQ(first_again.tokens, first_d.tokens);
  EXPECT_LT(MaxDiff(first_again.logprobs, first_d.logprobs), 1e-4f);
  const Outcome base_d = RunTogether(*engine, {cacheable(Greedy(d, ""))})[0];
  EXPECT_EQ(base_d.cached_prompt_tokens, 0);
  const Outcome second_d = RunTogether(*engine, {cacheable(Greedy(d, "second"))})[0];
  EXPECT_EQ(second_d.cached_prompt_tokens, 0);
  std::unique_ptr<Engine> fresh = testing::MakeFixtureEngine(model, {}, 256);
  ASSERT_NE(fresh, nullptr);
  const Outcome fresh_d = RunTogether(*fresh, {cacheable(Greedy(d, ""))})[0];
  EXPECT_EQ(base_d.tokens, fresh_d.tokens);
  EXPECT_LT(MaxDiff(base_d.logprobs, fresh_d.logprobs), 1e-4f);
}

// The engine's stats count each adapter's running and waiting requests (the model server protocol's LoRA info).
TEST(LoraRequests, StatsCountEachAdaptersRunningAndWaitingRequests) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  testing::RandomLora lora;
  lora.modules = {"transformer.h.0.attn.c_attn"};
  testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), lora, dir.File("a"));
  testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), lora, dir.File("b"));
  EngineConfig config;
  config.max_num_seqs = 1;  // one runs, the others wait
  std::unique_ptr<Engine> engine = testing::MakeFixtureEngine("gpt2-tiny", config, 64, "", {{"a", dir.File("a")}, {"b", dir.File("b")}});
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->stats().lora_running, (std::vector<int>{0, 0}));
  std::vector<std::shared_ptr<CollectingObserver>> observers;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    EngineRequest request = Greedy(Prompt(*engine, 8, 10 * i), "b");
    request.sampling.max_tokens = 200;
    request.sampling.prompt_logprobs = false;
    observers.push_back(std::make_shared<CollectingObserver>());
    const absl::StatusOr<uint64_t> id = engine->Submit(request, observers.back());
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  bool seen = false;
  for (int i = 0; i < 2000 && !seen; ++i) {
    const EngineStats stats = engine->stats();
    seen = stats.lora_running == std::vector<int>{0, 1} && stats.lora_waiting == std::vector<int>{0, 2};
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(seen) << "never saw b running once and waiting twice";
  for (uint64_t id : ids) engine->Cancel(id);
  for (auto& observer : observers) EXPECT_TRUE(observer->Wait());
  const EngineStats idle = testing::IdleStats(*engine);
  EXPECT_EQ(idle.lora_running, (std::vector<int>{0, 0}));
  EXPECT_EQ(idle.lora_waiting, (std::vector<int>{0, 0}));
}

// Adapters loaded and unloaded while the engine serves: one loaded at run time gives what one loaded at start-up
// gives; a name is loaded once; an adapter in use is not unloaded; an unloaded one is refused; one loaded again
// under the same name is another model, its predecessor's prefix-cache blocks not found.
TEST(LoraAtRunTime, LoadedWhileServingEqualsLoadedAtStartAndUnloadsOnceIdle) {
  ARACH_REQUIRE_FIXTURES();
  const std::string model = "gpt2-tiny";
  testing::ScopedTempDir dir;
  testing::RandomLora a, b;
  a.seed = 21;
  b.seed = 22;
  testing::WriteRandomLora(testing::FixturePath(model), a, dir.File("a"));
  testing::WriteRandomLora(testing::FixturePath(model), b, dir.File("b"));
  EngineConfig config;
  config.enable_prefix_caching = true;
  std::unique_ptr<Engine> at_start = testing::MakeFixtureEngine(model, config, 64, "", {{"a", dir.File("a")}, {"b", dir.File("b")}});
  std::unique_ptr<Engine> engine = testing::MakeFixtureEngine(model, config, 64);
  ASSERT_NE(at_start, nullptr);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = Prompt(*engine, 40, 0);
  const auto cacheable = [&](const std::string& lora) {
    EngineRequest request = Greedy(prompt, lora);
    request.sampling.prompt_logprobs = false;
    return request;
  };
  const Outcome want_a = RunTogether(*at_start, {cacheable("a")})[0];
  const Outcome want_b = RunTogether(*at_start, {cacheable("b")})[0];
  ASSERT_NE(want_a.tokens, want_b.tokens);

  EXPECT_EQ(engine->Submit(cacheable("x"), std::make_shared<CollectingObserver>()).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(engine->LoadLora("x", dir.File("a")).ok());
  EXPECT_EQ(engine->lora_names(), std::vector<std::string>{"x"});
  const Outcome first = RunTogether(*engine, {cacheable("x")})[0];
  EXPECT_EQ(first.tokens, want_a.tokens);
  EXPECT_LT(MaxDiff(first.logprobs, want_a.logprobs), 1e-5f);
  EXPECT_EQ(RunTogether(*engine, {cacheable("x")})[0].cached_prompt_tokens, 32) << "its own blocks are found";

  const absl::Status again = engine->LoadLora("x", dir.File("b"));
  EXPECT_EQ(again.code(), absl::StatusCode::kInvalidArgument) << again;
  EXPECT_NE(again.message().find("already loaded"), std::string::npos) << again;
  const absl::Status missing = engine->LoadLora("y", dir.File("nonexistent"));
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("nonexistent/adapter_config.json"), std::string::npos) << missing;
  EXPECT_EQ(engine->lora_names(), std::vector<std::string>{"x"});

  // In use: a long request of it is queued or running, so it stays.
  EngineRequest long_request = cacheable("x");
  long_request.sampling.max_tokens = 500;
  auto running = std::make_shared<CollectingObserver>();
  const absl::StatusOr<uint64_t> id = engine->Submit(long_request, running);
  ASSERT_TRUE(id.ok()) << id.status();
  const absl::Status busy = engine->UnloadLora("x");
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition) << busy;
  engine->Cancel(*id);
  ASSERT_TRUE(running->Wait());
  testing::IdleStats(*engine);
  ASSERT_TRUE(engine->UnloadLora("x").ok());
  EXPECT_TRUE(engine->lora_names().empty());
  EXPECT_EQ(engine->Submit(cacheable("x"), std::make_shared<CollectingObserver>()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->UnloadLora("x").code(), absl::StatusCode::kNotFound);

  // Loaded again under the same name with other weights: another model.
  ASSERT_TRUE(engine->LoadLora("x", dir.File("b")).ok());
  const Outcome reloaded = RunTogether(*engine, {cacheable("x")})[0];
  EXPECT_EQ(reloaded.cached_prompt_tokens, 0) << "the blocks of the adapter unloaded under that name are not found";
  EXPECT_EQ(reloaded.tokens, want_b.tokens);
  EXPECT_LT(MaxDiff(reloaded.logprobs, want_b.logprobs), 1e-5f);
  EXPECT_EQ(testing::IdleStats(*engine).lora_adapters, (std::vector<std::string>{"x"})) << "the emptied slot is taken again";
}

// gpt2-tiny's bundle with `limits` (its KV pool: 64 blocks, or a fraction of the memory when `fraction` > 0).
absl::StatusOr<ModelBundle> LimitedBundle(const LoraLimits& limits, bool runtime_loading, double fraction = 0,
                                          const std::vector<LoraModule>& loras = {}) {
  LoadModelOptions load;
  if (fraction > 0) {
    load.kv_memory_fraction = fraction;
  } else {
    load.kv_blocks = 64;
  }
  load.lora_limits = limits;
  load.lora_runtime_loading = runtime_loading;
  load.lora_modules = loras;
  return LoadModelBundle(testing::FixturePath("gpt2-tiny"), load);
}

testing::RandomLora RandomOfRank(int r, uint64_t seed) {
  testing::RandomLora lora;
  lora.r = r;
  lora.seed = seed;
  return lora;
}

TEST(LoraLimits, ALoadBeyondMaxLorasOrMaxRankIsRefusedAndAnUnloadedSlotIsTakenAgain) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  uint64_t seed = 30;
  for (const char* name : {"a", "b", "c"}) {
    testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), RandomOfRank(8, ++seed), dir.File(name));
  }
  testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), RandomOfRank(16, ++seed), dir.File("wide"));
  absl::StatusOr<ModelBundle> bundle = LimitedBundle(LoraLimits{.max_loras = 2, .max_rank = 8}, true, 0, {{"a", dir.File("a")}});
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(std::move(*bundle), EngineConfig{});
  ASSERT_TRUE(engine.ok()) << engine.status();
  Engine& e = **engine;

  const absl::Status wide = e.LoadLora("wide", dir.File("wide"));
  EXPECT_EQ(wide.code(), absl::StatusCode::kInvalidArgument) << wide;
  EXPECT_EQ(wide.message(),
            "lora_path: " + dir.File("wide") + ": rank 16 exceeds --max_lora_rank 8 (the largest rank this server keeps memory for)");
  ASSERT_TRUE(e.LoadLora("b", dir.File("b")).ok());
  const absl::Status full = e.LoadLora("c", dir.File("c"));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_EQ(full.message(), "lora_name: 2 adapters are loaded, the most --max_loras 2 allows; unload one first");
  EXPECT_EQ(e.lora_names(), (std::vector<std::string>{"a", "b"}));

  ASSERT_TRUE(e.UnloadLora("a").ok());
  ASSERT_TRUE(e.LoadLora("c", dir.File("c")).ok());
  // Every request of c is served by c's weights, not a's that held the slot before.
  const std::vector<int32_t> prompt = Prompt(e, 20, 0);
  const Outcome served = RunTogether(e, {Greedy(prompt, "c")})[0];
  // (stats read after a step: a load is answered before the stats that show it are published)
  EXPECT_EQ(testing::IdleStats(e).lora_adapters, (std::vector<std::string>{"c", "b"})) << "c takes a's slot";
  ASSERT_TRUE(e.UnloadLora("b").ok());
  ASSERT_TRUE(e.LoadLora("a", dir.File("a")).ok());  // in b's slot
  EXPECT_NE(RunTogether(e, {Greedy(prompt, "a")})[0].logprobs, served.logprobs);
  EXPECT_EQ(RunTogether(e, {Greedy(prompt, "c")})[0].tokens, served.tokens);
}

TEST(LoraLimits, AReplacementTakesTheNameWhileTheRequestsInFlightFinishOnTheOldWeights) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), RandomOfRank(8, 51), dir.File("a"));
  testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), RandomOfRank(8, 52), dir.File("b"));
  EngineConfig config;
  config.enable_prefix_caching = true;
  std::unique_ptr<Engine> reference = testing::MakeFixtureEngine("gpt2-tiny", config, 64, "", {{"a", dir.File("a")}, {"b", dir.File("b")}});
  ASSERT_NE(reference, nullptr);
  absl::StatusOr<ModelBundle> bundle = LimitedBundle(LoraLimits{.max_loras = 2, .max_rank = 8}, true, 0, {{"x", dir.File("a")}});
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(std::move(*bundle), config);
  ASSERT_TRUE(engine.ok()) << engine.status();
  Engine& e = **engine;
  const std::vector<int32_t> prompt = Prompt(e, 40, 0);
  const auto request = [&](const std::string& lora, int max_tokens) {
    EngineRequest r = Greedy(prompt, lora);
    r.sampling.prompt_logprobs = false;
    r.sampling.max_tokens = max_tokens;
    return r;
  };
  const Outcome long_a = RunTogether(*reference, {request("a", 60)})[0];
  const Outcome want_b = RunTogether(*reference, {request("b", 12)})[0];
  ASSERT_EQ(RunTogether(e, {request("x", 12)})[0].cached_prompt_tokens, 0);
  // The tokens `observer` saw, its request cancelled: a prefix of long_a's where it ran on a's weights throughout.
  const auto cancelled_tokens = [&](uint64_t id, CollectingObserver& observer) {
    e.Cancel(id);
    EXPECT_TRUE(observer.Wait());
    std::vector<int32_t> tokens = observer.tokens();
    tokens.resize(std::min(tokens.size(), long_a.tokens.size()));
    return tokens;
  };

  // A long request of x runs while x is replaced by b's weights: it goes on with a's, a new one gets b's.
  auto in_flight = std::make_shared<CollectingObserver>();
  const absl::StatusOr<uint64_t> in_flight_id = e.Submit(request("x", 200), in_flight);  // (40 + 200 of 256 positions)
  ASSERT_TRUE(in_flight_id.ok()) << in_flight_id.status();
  ASSERT_TRUE(e.LoadLora("x", dir.File("b"), /*replace=*/true).ok());
  const Outcome replaced = RunTogether(e, {request("x", 12)})[0];
  EXPECT_EQ(replaced.tokens, want_b.tokens);
  EXPECT_LT(MaxDiff(replaced.logprobs, want_b.logprobs), 1e-5f);
  EXPECT_EQ(replaced.cached_prompt_tokens, 0) << "the blocks computed with the old weights are not found";
  // The request in flight still counts under the name it was made for (arach_lora_requests_info's running adapters).
  const EngineStats during = e.stats();
  ASSERT_EQ(during.lora_request_adapters.size(), 2u);
  EXPECT_EQ(during.lora_request_adapters, (std::vector<std::string>{"x", "x"})) << "the old weights' index and the new one's";
  EXPECT_EQ(during.lora_adapters, (std::vector<std::string>{"", "x"})) << "registered: the replacement only";
  EXPECT_EQ(during.lora_running[0], 1);
  const std::vector<int32_t> kept = cancelled_tokens(*in_flight_id, *in_flight);
  EXPECT_GE(kept.size(), 13u) << "it ran beside the 12 tokens of the new weights";
  EXPECT_EQ(kept, std::vector<int32_t>(long_a.tokens.begin(), long_a.tokens.begin() + static_cast<std::ptrdiff_t>(kept.size())))
      << "the request in flight kept the weights it started with";

  // Without `replace` the name is taken. The old slot was freed once its request ended: a second adapter fits.
  EXPECT_EQ(e.LoadLora("x", dir.File("a")).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status second = e.LoadLora("y", dir.File("a"));  // 2 of 2 slots
  ASSERT_TRUE(second.ok()) << second;
  // At the bound with none of its requests running, the replaced adapter is unloaded first.
  ASSERT_TRUE(e.LoadLora("x", dir.File("a"), /*replace=*/true).ok());
  EXPECT_EQ(RunTogether(e, {request("x", 60)})[0].tokens, long_a.tokens);
  // At the bound with a request of it in flight: no slot for the replacement.
  auto busy = std::make_shared<CollectingObserver>();
  const absl::StatusOr<uint64_t> busy_id = e.Submit(request("x", 200), busy);
  ASSERT_TRUE(busy_id.ok()) << busy_id.status();
  const absl::Status full = e.LoadLora("x", dir.File("b"), /*replace=*/true);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("the replacement needs room"), std::string::npos) << full;
  EXPECT_FALSE(cancelled_tokens(*busy_id, *busy).empty());
}

TEST(LoraLimits, TheKvPoolLeavesMemoryForTheAdaptersLoadedWhileServing) {
  ARACH_REQUIRE_FIXTURES();
  const LoraLimits limits{.max_loras = 4, .max_rank = 64};
  absl::StatusOr<ModelBundle> plain = LimitedBundle(limits, false, 0.001);
  absl::StatusOr<ModelBundle> kept = LimitedBundle(limits, true, 0.001);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(kept.ok()) << kept.status();
  const ModelRunner& runner = *kept->runner;
  // 4 adapters of rank 64 on every projection, none loaded at start-up.
  const size_t bound = LoraBytesBound(runner.backend(), kept->config, 64);
  EXPECT_GT(bound, 0u);
  EXPECT_NE(runner.kv_memory_note().find(", less " + DescribeBytes(static_cast<int64_t>(4 * bound)) + " kept for LoRA adapters"), std::string::npos)
      << runner.kv_memory_note();
  // (The two pools are not compared block for block: each is a fraction of the host memory available when it was
  // made, which other processes move by more than the adapters' share; the note says what was taken off first.)
  EXPECT_EQ(plain->runner->kv_memory_note().find("LoRA"), std::string::npos) << plain->runner->kv_memory_note();

  // Memory for more adapters than the device has: refused at start-up, naming the flags.
  const absl::StatusOr<ModelBundle> too_many = LimitedBundle(LoraLimits{.max_loras = 1000000, .max_rank = 512}, true, 0.001);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(too_many.status().message().find("--max_loras"), std::string::npos) << too_many.status();
  // Start-up adapters beyond the bound or above the rank: refused naming the flag.
  testing::ScopedTempDir dir;
  testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), RandomOfRank(16, 40), dir.File("wide"));
  const absl::StatusOr<ModelBundle> wide = LimitedBundle(LoraLimits{.max_loras = 4, .max_rank = 8}, false, 0, {{"w", dir.File("wide")}});
  EXPECT_NE(wide.status().message().find("--max_lora_rank 8"), std::string::npos) << wide.status();
  const absl::StatusOr<ModelBundle> many =
      LimitedBundle(LoraLimits{.max_loras = 1, .max_rank = 64}, false, 0, {{"w", dir.File("wide")}, {"v", dir.File("wide")}});
  EXPECT_EQ(many.status().message(), "--lora_modules: 2 adapters are more than --max_loras 1");
}

// More adapters registered than the device holds (--max_cpu_loras above --max_loras): requests of every adapter,
// submitted together, each get their own adapter's tokens; the device never holds more than max_loras.
TEST(LoraSwapping, MoreAdaptersThanTheDeviceHoldsAreEachServedWithTheirOwnWeights) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  std::vector<LoraModule> modules;
  uint64_t seed = 60;
  for (const std::string name : {"a", "b", "c"}) {
    testing::RandomLora lora = RandomOfRank(8, ++seed);
    if (name == "a") lora.modules = {"transformer.h.0.attn.c_attn"};  // smaller than the bound
    testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), lora, dir.File(name));
    modules.push_back({name, dir.File(name)});
  }
  std::unique_ptr<Engine> reference = testing::MakeFixtureEngine("gpt2-tiny", {}, 64, "", modules);
  ASSERT_NE(reference, nullptr);
  absl::StatusOr<ModelBundle> bundle = LimitedBundle(LoraLimits{.max_loras = 1, .max_cpu_loras = 3, .max_rank = 8}, false, 0, modules);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  // Memory for one adapter of rank 8 is kept, less what a (on the device from the start) takes.
  const absl::StatusOr<LoraAdapter> a = LoadLoraAdapter("a", dir.File("a"), bundle->config);
  ASSERT_TRUE(a.ok()) << a.status();
  const size_t kept = LoraBytesBound(bundle->runner->backend(), bundle->config, 8) - LoraBytes(bundle->runner->backend(), *a);
  EXPECT_GT(kept, 0u);
  EXPECT_NE(bundle->runner->kv_memory_note().find(", less " + DescribeBytes(static_cast<int64_t>(kept)) + " kept for LoRA adapters"),
            std::string::npos)
      << bundle->runner->kv_memory_note();
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(std::move(*bundle), EngineConfig{});
  ASSERT_TRUE(engine.ok()) << engine.status();
  Engine& e = **engine;
  EXPECT_EQ(e.lora_names(), (std::vector<std::string>{"a", "b", "c"}));

  std::vector<EngineRequest> requests;
  int shift = 0;
  for (const char* lora : {"a", "b", "c", "a", "", "c"}) requests.push_back(Greedy(Prompt(e, 12, shift += 3), lora));
  const std::vector<Outcome> want = RunTogether(*reference, requests);
  const std::vector<Outcome> got = RunTogether(e, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    ExpectSame(got[i], want[i], 1e-5f, "request " + std::to_string(i) + " of '" + requests[i].lora + "'");
  }
  const EngineStats stats = testing::IdleStats(e);
  EXPECT_EQ(stats.lora_on_device, 1);
  EXPECT_EQ(stats.lora_max_on_device, 1);
  EXPECT_GE(stats.lora_swap_ins, 2) << "b and c at least";
  EXPECT_GT(stats.lora_deferred_admissions, 0);
  EXPECT_EQ(stats.lora_adapters, (std::vector<std::string>{"a", "b", "c"}));
}

// Loads while serving with swapping: beyond the device's adapters a load waits on the host; beyond --max_cpu_loras
// it is refused naming that flag; an adapter on the host only is unloaded or replaced like any other.
TEST(LoraSwapping, AdaptersLoadedWhileServingWaitOnTheHostUntilARequestNeedsThem) {
  ARACH_REQUIRE_FIXTURES();
  testing::ScopedTempDir dir;
  std::vector<LoraModule> modules;
  uint64_t seed = 70;
  for (const char* name : {"a", "b", "c"}) {
    testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), RandomOfRank(8, ++seed), dir.File(name));
    modules.push_back({name, dir.File(name)});
  }
  std::unique_ptr<Engine> reference = testing::MakeFixtureEngine("gpt2-tiny", {}, 64, "", modules);
  ASSERT_NE(reference, nullptr);
  absl::StatusOr<ModelBundle> bundle = LimitedBundle(LoraLimits{.max_loras = 1, .max_cpu_loras = 2, .max_rank = 8}, true);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(std::move(*bundle), EngineConfig{});
  ASSERT_TRUE(engine.ok()) << engine.status();
  Engine& e = **engine;
  const std::vector<int32_t> prompt = Prompt(e, 20, 0);
  const auto want = [&](const std::string& lora) { return RunTogether(*reference, {Greedy(prompt, lora)})[0]; };
  const auto served = [&](const std::string& lora) { return RunTogether(e, {Greedy(prompt, lora)})[0]; };

  ASSERT_TRUE(e.LoadLora("x", dir.File("a")).ok());
  ASSERT_TRUE(e.LoadLora("y", dir.File("b")).ok());
  EngineStats stats = testing::IdleStats(e);
  EXPECT_EQ(stats.lora_on_device, 1) << "y waits on the host";
  EXPECT_EQ(stats.lora_swap_ins, 0);
  const absl::Status full = e.LoadLora("z", dir.File("c"));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_EQ(full.message(), "lora_name: 2 adapters are loaded, the most --max_cpu_loras 2 allows; unload one first");

  ExpectSame(served("y"), want("b"), 1e-5f, "y, swapped in");
  ExpectSame(served("x"), want("a"), 1e-5f, "x, swapped back");
  stats = testing::IdleStats(e);
  EXPECT_EQ(stats.lora_swap_ins, 2);
  EXPECT_EQ(stats.lora_on_device, 1);

  ASSERT_TRUE(e.UnloadLora("y").ok());  // on the host only
  ASSERT_TRUE(e.LoadLora("z", dir.File("c")).ok());
  ASSERT_TRUE(e.LoadLora("x", dir.File("b"), /*replace=*/true).ok());
  ExpectSame(served("x"), want("b"), 1e-5f, "x replaced by b's weights");
  ExpectSame(served("z"), want("c"), 1e-5f, "z");
  EXPECT_EQ(e.lora_names(), (std::vector<std::string>{"x", "z"}));
}

TEST(LoraRequests, AnAdapterNotLoadedIsRefusedNamingTheField) {
  ARACH_REQUIRE_FIXTURES();
  std::unique_ptr<Engine> engine = testing::MakeFixtureEngine("gpt2-tiny", {}, 64);
  ASSERT_NE(engine, nullptr);
  const absl::StatusOr<uint64_t> id = engine->Submit(Greedy({1, 2, 3}, "missing"), std::make_shared<CollectingObserver>());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(id.status().message().find("lora"), std::string::npos) << id.status();
  EXPECT_NE(id.status().message().find("missing"), std::string::npos) << id.status();
}

}  // namespace
}  // namespace arach
