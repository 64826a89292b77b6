// The evaluation tasks of arach-cli eval, run through a server: LAMBADA (lm-eval-harness lambada_openai
// protocol), perplexity of a text over windows, and generation latency.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/arach_client.h"

namespace arach::client {

// One LAMBADA line: context = the text up to its last space, target = " " + the last word, tokenized
// separately (context with BOS where the tokenizer's convention asks for it).
struct LambadaItem {
  std::vector<int32_t> context;
  std::vector<int32_t> target;
};

struct LambadaScore {
  double logprob = 0;   // sum of the target tokens' log-probs
  bool greedy = false;  // every target token was the most likely one
};

// The first `limit` lines (0 = all) of a LAMBADA jsonl file ({"text": ...} per line).
absl::StatusOr<std::vector<LambadaItem>> LoadLambada(ArachClient& client, const std::string& path, int limit);
absl::StatusOr<std::vector<LambadaScore>> ScoreLambada(ArachClient& client, const std::vector<LambadaItem>& items,
                                                       const arach::v1::VariantSpec& variant);

// Windows of a text file as the fixtures' protocol builds them: tokenize the whole text (no BOS), keep
// ids[int(val_fraction * n):] (val_fraction 0 = all), windows ids[W*w : W*w + W + 1], each scored on its
// last W tokens; at most `max_windows` (0 = all).
absl::StatusOr<std::vector<std::vector<int32_t>>> TextWindows(ArachClient& client, const std::string& path, int window,
                                                              int max_windows, double val_fraction);
// Negative log-likelihood (summed) and scored tokens of each window.
struct WindowScore {
  double nll = 0;
  int tokens = 0;
};
absl::StatusOr<std::vector<WindowScore>> ScoreWindows(ArachClient& client, const std::vector<std::vector<int32_t>>& windows,
                                                      const arach::v1::VariantSpec& variant);

struct LatencySample {
  double ttft = 0, tpot = 0, e2e = 0;
  int tokens = 0;
};
// Generates `max_tokens` greedy tokens after each prompt, one request at a time, and times it.
absl::StatusOr<std::vector<LatencySample>> MeasureLatency(ArachClient& client, const std::vector<std::vector<int32_t>>& prompts,
                                                          const arach::v1::VariantSpec& variant, int max_tokens);

}  // namespace arach::client
