// LoRA adapters on the CUDA backend (built with ARACH_TEST_CUDA_SIM: its kernels on the SIMT simulator): the
// adapter's rows gathered, through its two GEMMs and scattered back by the device's own ops give the CPU's float32
// log-probs within the reduced-precision tolerance, for prompts (prefill) and for decode steps that mix the adapter,
// ARACH and the base model in one batch (steps with LoRA rows run without a step graph).
#include <memory>
#include <string>
#include <vector>

#include "engine/bundle/model_bundle.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/devices.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/lora_folders.h"
#include "tests/testing/reduced_precision.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

constexpr char kLoraModel[] = "gpt2-tiny";

#if defined(ARACH_TEST_CUDA_SIM)
#define ARACH_REQUIRE_LORA_DEVICE() ARACH_REQUIRE_FIXTURES()
#else
#define ARACH_REQUIRE_LORA_DEVICE() \
  ARACH_REQUIRE_GPU();              \
  ARACH_REQUIRE_FIXTURES()
#endif

std::unique_ptr<Engine> DeviceEngine(const std::vector<LoraModule>& loras) {
#if defined(ARACH_TEST_CUDA_SIM)
  return testing::MakeFixtureEngineOn(testing::CreateSimulatedCudaBackendFor, kLoraModel, {}, 64, "", loras);
#else
  LoadModelOptions load;
  load.device = DeviceKind::kCuda;
  load.kv_blocks = 64;
  load.adapter = testing::FixturePath(std::string(kLoraModel) + "/preproj.safetensors");
  load.hub_embedding = testing::FixturePath(testing::RefsFileFor(kLoraModel)) + ":" + kLoraModel + ".hub_embedding";
  load.lora_modules = loras;
  absl::StatusOr<ModelBundle> bundle = LoadModelBundle(testing::FixturePath(kLoraModel), load);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  if (!bundle.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(std::move(*bundle), {});
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
#endif
}

struct LoraRun {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;         // the generated tokens'
  std::vector<float> prompt_logprobs;  // score requests
};

std::vector<LoraRun> RunTogether(Engine& engine, const std::vector<EngineRequest>& requests) {
  std::vector<std::shared_ptr<testing::CollectingObserver>> observers;
  for (const EngineRequest& request : requests) {
    observers.push_back(std::make_shared<testing::CollectingObserver>());
    const absl::StatusOr<uint64_t> id = engine.Submit(request, observers.back());
    EXPECT_TRUE(id.ok()) << id.status();
  }
  std::vector<LoraRun> runs;
  for (auto& observer : observers) {
    EXPECT_TRUE(observer->Wait());
    EXPECT_TRUE(observer->finish().status.ok()) << observer->finish().status;
    LoraRun& run = runs.emplace_back();
    for (const StreamChunk& chunk : observer->chunks()) {
      for (const SampledToken& t : chunk.tokens) {
        run.tokens.push_back(t.token);
        run.logprobs.push_back(t.logprob);
      }
    }
    run.prompt_logprobs = observer->finish().prompt_logprobs;
  }
  return runs;
}

EngineRequest Score(std::vector<int32_t> prompt, const std::string& lora, bool arach) {
  EngineRequest request;
  request.kind = RequestKind::kScore;
  request.prompt = std::move(prompt);
  request.lora = lora;
  request.variant.arach = arach;
  return request;
}

float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

TEST(LoraOnTheDevice, PromptsAndMixedDecodeStepsGiveTheCpusLogprobs) {
  ARACH_REQUIRE_LORA_DEVICE();
  testing::ScopedTempDir dir;
  testing::RandomLora lora;
  lora.modules = testing::LoraTargetModules(testing::FixturePath(kLoraModel));
  lora.b_stddev = 0.2f;  // an adapter that moves log-probs well past the device's tolerance
  testing::WriteRandomLora(testing::FixturePath(kLoraModel), lora, dir.File("lora"));
  const std::vector<LoraModule> loras = {{"tuned", dir.File("lora")}};
  std::unique_ptr<Engine> device = DeviceEngine(loras);
  std::unique_ptr<Engine> cpu = testing::MakeFixtureEngine(kLoraModel, {}, 64, "", loras);
  ASSERT_NE(device, nullptr);
  ASSERT_NE(cpu, nullptr);
  const float tolerance = 2 * testing::kReducedPrecisionLogitTolerance;  // a log-softmax moves by up to twice its logits
  const std::vector<int32_t> prompt = testing::RefPrompt(kLoraModel, "p48");

  // Prefill: a prompt's log-probs.
  for (const bool arach : {false, true}) {
    SCOPED_TRACE(arach ? "arach" : "base");
    const LoraRun on_device = RunTogether(*device, {Score(prompt, "tuned", arach)})[0];
    const LoraRun on_cpu = RunTogether(*cpu, {Score(prompt, "tuned", arach)})[0];
    const LoraRun without = RunTogether(*cpu, {Score(prompt, "", arach)})[0];
    EXPECT_LT(MaxDiff(on_device.prompt_logprobs, on_cpu.prompt_logprobs), tolerance);
    EXPECT_GT(MaxDiff(on_cpu.prompt_logprobs, without.prompt_logprobs), 5 * tolerance) << "the adapter changes too little";
  }

  // Decode: the adapter, the adapter under ARACH and the base model in one batch, token by token; each generated
  // token's log-prob equals the CPU's for the same sequence.
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 3; ++i) {
    EngineRequest& r = requests.emplace_back();
    r.prompt = std::vector<int32_t>(prompt.begin() + 4 * i, prompt.end() - 4 * i);
    r.lora = i == 2 ? "" : "tuned";
    r.variant.arach = i == 1;
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 8;
    r.sampling.ignore_eos = true;
    r.sampling.logprobs = true;
  }
  const std::vector<LoraRun> generated = RunTogether(*device, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(generated[i].tokens.size(), 8u);
    std::vector<int32_t> sequence = requests[i].prompt;
    sequence.insert(sequence.end(), generated[i].tokens.begin(), generated[i].tokens.end());
    const LoraRun scored = RunTogether(*cpu, {Score(sequence, requests[i].lora, requests[i].variant.arach)})[0];
    const std::vector<float> cpu_logprobs(scored.prompt_logprobs.end() - 8, scored.prompt_logprobs.end());
    EXPECT_LT(MaxDiff(generated[i].logprobs, cpu_logprobs), tolerance);
  }
}

}  // namespace
}  // namespace arach
