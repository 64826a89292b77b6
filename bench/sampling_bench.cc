// The host's work per row of logits, at a vocabulary's size (Qwen's 151,936 by default): scoring a row
// (ScoreRow: log-prob, rank, argmax, and 0, 1, 5 or 20 alternatives: prompt log-probs, echo, the gRPC Score call)
// and sampling a token (Sampler::Sample: greedy, temperature, top-p, top-k, min-p), in microseconds per row (the
// median of --repeats passes over --rows rows of normal logits, standard deviation 3; rows that do not fit the cache, as
// the logits of a step do not).
//
//   build/bench/sampling_bench [--vocab 151936] [--rows 64] [--repeats 5]
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "absl/flags/flag.h"
#include "bench/bench_flags.h"
#include "bench/bench_util.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"

namespace arach::bench {
namespace {

// The median of --repeats passes of `pass` over `rows` rows, in microseconds per row.
double MicrosPerRow(int rows, const std::function<void(int)>& pass) {
  std::vector<double> passes;
  for (int repeat = 0; repeat < absl::GetFlag(FLAGS_repeats); ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < rows; ++r) pass(r);
    passes.push_back(Seconds(start) * 1e6 / rows);
  }
  return Median(std::move(passes));
}

int Run() {
  const int vocab = absl::GetFlag(FLAGS_vocab);
  const int rows = absl::GetFlag(FLAGS_rows);
  if (vocab < 1 || rows < 1) {
    std::fprintf(stderr, "--vocab and --rows must be positive\n");
    return 2;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(vocab) * static_cast<size_t>(rows));
  for (float& v : logits) v = normal(rng);
  const auto row = [&](int r) { return std::span<const float>(logits.data() + static_cast<size_t>(r) * static_cast<size_t>(vocab), static_cast<size_t>(vocab)); };
  int64_t sink = 0;  // keeps the results alive

  std::printf("ScoreRow, %d-token rows\n%-28s %12s\n", vocab, "alternatives", "us/row");
  for (const int n : {0, 1, 5, 20}) {
    std::vector<TokenLogprob> top(static_cast<size_t>(n));
    const double us = MicrosPerRow(rows, [&](int r) { sink += ScoreRow(row(r), (r * 7919) % vocab, top).rank; });
    std::printf("%-28d %12.1f\n", n, us);
  }

  struct Case {
    const char* name;
    float temperature;
    int top_k;
    float top_p;
    float min_p;
  };
  std::printf("\nSampler::Sample, %d-token rows\n%-28s %12s\n", vocab, "rules", "us/token");
  for (const Case c : {Case{"greedy", 0.0f, 0, 1.0f, 0.0f}, Case{"temperature 1", 1.0f, 0, 1.0f, 0.0f},
                       Case{"temperature 0.7, top_p 0.9", 0.7f, 0, 0.9f, 0.0f}, Case{"temperature 1, top_k 50", 1.0f, 50, 1.0f, 0.0f},
                       Case{"temperature 1, min_p 0.05", 1.0f, 0, 1.0f, 0.05f}}) {
    SamplingParams params;
    params.temperature = c.temperature;
    params.top_k = c.top_k;
    params.top_p = c.top_p;
    params.min_p = c.min_p;
    Sampler sampler;
    SamplerInput in;
    in.params = &params;
    in.seed = 3;
    const double us = MicrosPerRow(rows, [&](int r) {
      in.logits = row(r);
      in.num_generated = r;
      sink += sampler.Sample(in).token;
    });
    std::printf("%-28s %12.1f\n", c.name, us);
  }
  std::printf("\n(checksum %lld)\n", static_cast<long long>(sink));
  return 0;
}

}  // namespace
}  // namespace arach::bench

int main(int argc, char** argv) {
  return arach::bench::BenchmarkMain(argc, argv, {"sampling_bench", "the host's scoring and sampling per row of logits", arach::bench::kSamplingBenchFlags},
                                     arach::bench::Run);
}
