#include "server/similarity_scores.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/status.h"

namespace arach::server {

absl::StatusOr<EngineRequest> PairEngineRequest(const Engine& engine, const RequestLimits& limits, const NamedText& first,
                                                const NamedText& second, std::optional<int> truncate_prompt_tokens,
                                                const Variant& variant) {
  EngineRequest r;
  r.kind = RequestKind::kClassify;
  r.class_token_ids = engine.classifier_token_ids();
  ARACH_ASSIGN_OR_RETURN(r.prompt, EncodeTextPrompt(engine, limits, first.field, first.text));
  ARACH_ASSIGN_OR_RETURN(const std::vector<int32_t> second_ids, EncodeTextPrompt(engine, limits, second.field, second.text));
  r.prompt.insert(r.prompt.end(), second_ids.begin(), second_ids.end());
  ARACH_RETURN_IF_ERROR(CheckPromptTokens(limits, second.field, r.prompt.size()));
  ARACH_RETURN_IF_ERROR(TruncatePrompt(truncate_prompt_tokens, engine.model_config().max_positions, r.prompt).status());
  r.variant = variant;
  return r;
}

std::vector<double> ClassProbabilities(std::span<const float> class_logits) {
  if (class_logits.size() == 1) return {1.0 / (1.0 + std::exp(-static_cast<double>(class_logits[0])))};
  double top = -INFINITY;
  for (const float logit : class_logits) top = std::max(top, static_cast<double>(logit));
  std::vector<double> probs;
  double sum = 0;
  for (const float logit : class_logits) sum += probs.emplace_back(std::exp(static_cast<double>(logit) - top));
  for (double& p : probs) p /= sum;
  return probs;
}

double ClassifierScore(std::span<const float> class_logits) {
  return class_logits.empty() ? 0.5 : ClassProbabilities(class_logits).back();
}

double CosineSimilarity(std::span<const float> a, std::span<const float> b) {
  double dot = 0, norm_a = 0, norm_b = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    dot += static_cast<double>(a[k]) * b[k];
    norm_a += static_cast<double>(a[k]) * a[k];
    norm_b += static_cast<double>(b[k]) * b[k];
  }
  return norm_a > 0 && norm_b > 0 ? dot / std::sqrt(norm_a * norm_b) : 0.0;
}

std::vector<size_t> RankBestFirst(const std::vector<double>& scores, std::optional<int> top_n) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (top_n && *top_n > 0 && static_cast<size_t>(*top_n) < order.size()) order.resize(static_cast<size_t>(*top_n));
  return order;
}

}  // namespace arach::server
