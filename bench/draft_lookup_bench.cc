// The host's cost of proposing prompt-lookup drafts (engine/spec) per sequence per decode step, at long contexts:
// ProposeByLookup's scan of the whole sequence against the NgramIndex the engine keeps per drafting request (its
// Extend by the step's new token plus its Propose), in microseconds per step, the median of --repeats passes of
// --steps steps at the end of each context length. Tokens drawn from a Zipf distribution over --vocab (as words
// of text are: frequent ones recur everywhere, rare ones hardly) and uniformly (hardly any n-gram recurs: every
// scan runs to the end for each n-gram size).
//
//   build/bench/draft_lookup_bench [--contexts 1000,10000,100000] [--steps 64] [--vocab 151936] [--repeats 3]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "absl/flags/flag.h"
#include "bench/bench_flags.h"
#include "bench/bench_util.h"
#include "engine/spec/draft_proposer.h"
#include "engine/spec/ngram_index.h"

namespace arach::bench {
namespace {

constexpr NgramSizes kPromptLookupNgrams{2, 4};  // the engine's (engine_drafts.cc)
constexpr int kDrafts = 8;

std::vector<int32_t> ZipfTokens(std::mt19937& rng, int length, int vocab) {
  std::vector<double> weights(static_cast<size_t>(vocab));
  for (int r = 0; r < vocab; ++r) weights[r] = 1.0 / (r + 1.0);
  std::discrete_distribution<int32_t> token(weights.begin(), weights.end());
  std::vector<int32_t> tokens(static_cast<size_t>(length));
  for (int32_t& t : tokens) t = token(rng);
  return tokens;
}

std::vector<int32_t> UniformTokens(std::mt19937& rng, int length, int vocab) {
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(length));
  for (int32_t& t : tokens) t = token(rng);
  return tokens;
}

struct Figures {
  double scan_us = 0;        // per step
  double index_us = 0;       // per step: Extend by one token + Propose
  double build_us_per_token = 0;  // indexing the context before the timed steps
  int found = 0;             // steps with a proposal (the same for both: checked)
};

// The last `steps` positions of `tokens`, each a decode step whose sequence is the tokens before it.
absl::StatusOr<Figures> Measure(const std::vector<int32_t>& tokens, int steps) {
  Figures figures;
  const int first = static_cast<int>(tokens.size()) - steps;
  std::vector<double> scan_passes, index_passes, build_passes;
  for (int repeat = 0; repeat < absl::GetFlag(FLAGS_repeats); ++repeat) {
    std::vector<std::vector<int32_t>> scanned;
    auto start = std::chrono::steady_clock::now();
    for (int end = first; end < static_cast<int>(tokens.size()); ++end) {
      const std::span<const int32_t> sequence(tokens.data(), static_cast<size_t>(end));
      scanned.push_back(ProposeByLookup(sequence, sequence, 0, kDrafts, kPromptLookupNgrams).tokens);
    }
    scan_passes.push_back(Seconds(start) * 1e6 / steps);

    NgramIndex index(kPromptLookupNgrams);
    start = std::chrono::steady_clock::now();
    index.Extend(std::span<const int32_t>(tokens.data(), static_cast<size_t>(first)));
    build_passes.push_back(Seconds(start) * 1e6 / first);
    int found = 0;
    start = std::chrono::steady_clock::now();
    std::vector<std::vector<int32_t>> indexed;
    for (int end = first; end < static_cast<int>(tokens.size()); ++end) {
      const std::span<const int32_t> sequence(tokens.data(), static_cast<size_t>(end));
      index.Extend(sequence);
      indexed.push_back(index.Propose(sequence, sequence, 0, kDrafts).tokens);
    }
    index_passes.push_back(Seconds(start) * 1e6 / steps);
    if (indexed != scanned) return absl::InternalError("the index proposed other drafts than the scan");
    for (const auto& p : indexed) found += p.empty() ? 0 : 1;
    figures.found = found;
  }
  figures.scan_us = Median(scan_passes);
  figures.index_us = Median(index_passes);
  figures.build_us_per_token = Median(build_passes);
  return figures;
}

int Run() {
  const int vocab = absl::GetFlag(FLAGS_vocab);
  const int steps = absl::GetFlag(FLAGS_steps);
  const absl::StatusOr<std::vector<int>> contexts = PositiveCounts("contexts", absl::GetFlag(FLAGS_contexts));
  if (!contexts.ok() || vocab < 2 || steps < 1) {
    std::fprintf(stderr, "%s\n", contexts.ok() ? "--vocab must be at least 2 and --steps positive" : contexts.status().ToString().c_str());
    return 2;
  }
  std::printf("prompt lookup (%d-%d-grams, %d drafts), vocabulary %d: microseconds per sequence per decode step\n", kPromptLookupNgrams.min_n,
              kPromptLookupNgrams.max_n, kDrafts, vocab);
  std::printf("%-8s %10s %12s %12s %10s %16s %10s\n", "tokens", "context", "scan us", "index us", "speed-up", "index build us/t", "proposed");
  std::mt19937 rng(3);
  for (const char* distribution : {"zipf", "uniform"}) {
    for (const int context : *contexts) {
      const int length = context + steps;
      const std::vector<int32_t> tokens =
          distribution[0] == 'z' ? ZipfTokens(rng, length, vocab) : UniformTokens(rng, length, vocab);
      const absl::StatusOr<Figures> f = Measure(tokens, steps);
      if (!f.ok()) {
        std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
        return 1;
      }
      std::printf("%-8s %10d %12.2f %12.2f %9.0fx %16.3f %7d/%d\n", distribution, context, f->scan_us, f->index_us,
                  f->scan_us / std::max(f->index_us, 1e-3), f->build_us_per_token, f->found, steps);
    }
  }
  return 0;
}

}  // namespace
}  // namespace arach::bench

int main(int argc, char** argv) {
  return arach::bench::BenchmarkMain(argc, argv, {"draft_lookup_bench", "the host's cost of prompt-lookup drafts per decode step",
                                                  arach::bench::kDraftLookupBenchFlags},
                                     arach::bench::Run);
}
