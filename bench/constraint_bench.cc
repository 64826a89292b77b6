// Structured output's own costs on the CPU, for a model's tokenizer (GPT-2's 50257-token vocabulary by default):
// the tokenizer's one-time preparation, compiling --schemas distinct JSON Schemas (cold: each is new to the
// compiler's cache; p50 / p99), and per generated token the mask (the allowed-token bitmask for the next token
// plus advancing the matcher past the chosen one; p50 / p99 over every step of every schema) and the sampler's
// masking of the logits. The walk picks random allowed tokens, so the paths look like sampled output.
//
//   build/bench/constraint_bench [--preset gpt2/124m] [--json_schema bench/schemas/nested.json] [--schemas 50] [--steps 64]
#include <cstdio>
#include <random>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_flags.h"
#include "bench/bench_util.h"
#include "engine/constraint/constraint_compiler.h"
#include "engine/core/mapped_file.h"
#include "engine/core/percentile.h"
#include "engine/model/model_config.h"
#include "engine/sampling/sampler.h"
#include "nlohmann/json.hpp"

namespace arach::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Micros(Clock::time_point since) { return Seconds(since) * 1e6; }

int Run() {
  if (!StructuredOutputAvailable()) {
    std::fprintf(stderr, "constraint_bench: structured output is not built (%s)\n", StructuredOutputBackend());
    return 1;
  }
  const absl::StatusOr<std::string> folder = ModelFolderFromFlags();
  if (!folder.ok()) {
    std::fprintf(stderr, "%s\n", folder.status().ToString().c_str());
    return 1;
  }
  const std::string& dir = *folder;
  auto tokenizer = LoadTokenizer(dir);
  auto config = LoadModelConfig(dir);
  const std::string schema_file = absl::GetFlag(FLAGS_json_schema);
  auto schema_text = ReadFileToString(schema_file);
  if (!tokenizer.ok() || !config.ok() || !schema_text.ok()) {
    std::fprintf(stderr, "%s %s %s\n", tokenizer.status().ToString().c_str(), config.status().ToString().c_str(),
                 schema_text.status().ToString().c_str());
    return 1;
  }
  const int vocab = config->vocab_size;
  ConstraintCompiler compiler(**tokenizer, vocab, config->eos_token_ids);

  // The first compilation also reads the vocabulary into xgrammar's tokenizer info (once per server).
  Clock::time_point t = Clock::now();
  if (auto first = compiler.Compile(OutputConstraint::Regex("warm"), "warm"); !first.ok()) {
    std::fprintf(stderr, "%s\n", first.status().ToString().c_str());
    return 1;
  }
  const double prepare_ms = Micros(t) / 1e3;

  const nlohmann::json schema = nlohmann::json::parse(*schema_text);
  std::vector<double> compile_ms, mask_us, sampler_masked_us, sampler_free_us;
  std::mt19937 rng(7);
  std::vector<float> logits(static_cast<size_t>(vocab));
  std::normal_distribution<float> normal;
  for (float& l : logits) l = normal(rng);
  SamplingParams params;  // temperature 1
  Sampler sampler;
  for (int s = 0; s < absl::GetFlag(FLAGS_schemas); ++s) {
    nlohmann::json variant = schema;  // distinct text, so no compilation is a cache hit
    variant["properties"][absl::StrCat("marker_", s)] = {{"const", s}};
    t = Clock::now();
    auto compiled = compiler.Compile(OutputConstraint::JsonSchema(variant.dump(), /*strict=*/false), "json_schema");
    if (!compiled.ok()) {
      std::fprintf(stderr, "%s\n", compiled.status().ToString().c_str());
      return 1;
    }
    compile_ms.push_back(Micros(t) / 1e3);
    absl::StatusOr<ConstraintMatcher> created = ConstraintMatcher::Create(*compiled, config->eos_token_ids);
    if (!created.ok()) {
      std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
      return 1;
    }
    ConstraintMatcher& matcher = *created;
    for (int step = 0; step < absl::GetFlag(FLAGS_steps) && !matcher.Terminated(); ++step) {
      t = Clock::now();
      const std::span<const uint32_t> allowed = *matcher.AllowedTokens();
      std::vector<int32_t> choices;
      for (int id = 0; id < vocab; ++id) {
        if ((allowed[static_cast<size_t>(id) / 32] >> (id % 32)) & 1u) choices.push_back(id);
      }
      const double fill_us = Micros(t);
      if (choices.empty()) break;
      // The sampler with the mask against without it, on the same logits.
      SamplerInput in;
      in.logits = logits;
      in.params = &params;
      in.num_generated = step;
      Clock::time_point u = Clock::now();
      (void)sampler.Sample(in);
      sampler_free_us.push_back(Micros(u));
      in.allowed = allowed;
      u = Clock::now();
      (void)sampler.Sample(in);
      sampler_masked_us.push_back(Micros(u));
      const int32_t token = choices[rng() % choices.size()];
      t = Clock::now();
      if (!matcher.Accept(token)) {
        std::fprintf(stderr, "the matcher refused a token of its own mask\n");
        return 1;
      }
      mask_us.push_back(fill_us + Micros(t));
    }
  }
  std::printf("# constraint_bench: %s (vocabulary %d), schema %s, %d schemas x up to %d tokens\n", dir.c_str(), vocab,
              schema_file.c_str(), absl::GetFlag(FLAGS_schemas), absl::GetFlag(FLAGS_steps));
  std::printf("tokenizer preparation (once):        %8.1f ms\n", prepare_ms);
  std::printf("schema compile (cold)   p50 %8.2f ms  p99 %8.2f ms  max %8.2f ms\n", Percentile(compile_ms, 0.5),
              Percentile(compile_ms, 0.99), Percentile(compile_ms, 1.0));
  std::printf("mask + advance / token  p50 %8.1f us  p99 %8.1f us  (%zu tokens)\n", Percentile(mask_us, 0.5), Percentile(mask_us, 0.99),
              mask_us.size());
  std::printf("sampler, masked         p50 %8.1f us  p99 %8.1f us\n", Percentile(sampler_masked_us, 0.5),
              Percentile(sampler_masked_us, 0.99));
  std::printf("sampler, free           p50 %8.1f us  p99 %8.1f us\n", Percentile(sampler_free_us, 0.5), Percentile(sampler_free_us, 0.99));
  return 0;
}

}  // namespace
}  // namespace arach::bench

int main(int argc, char** argv) {
  return arach::bench::BenchmarkMain(argc, argv, {"constraint_bench", "structured output's compile and per-token costs",
                                                  arach::bench::kConstraintBenchFlags},
                                     arach::bench::Run);
}
