#include "server/embedding_answer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/tokenizer/unicode.h"

namespace arach::server {

absl::Status CheckEmbeddingRequest(const Engine& engine, size_t inputs, const std::string& inputs_field, std::optional<int64_t> dimensions) {
  const int hidden_size = engine.model_config().hidden_size;
  if (dimensions && *dimensions > hidden_size) {
    return InvalidField("dimensions", absl::StrCat(*dimensions, " exceeds the model's ", hidden_size, " dimensions"));
  }
  if (inputs == 0) return InvalidField(inputs_field, "empty");
  const size_t queue = static_cast<size_t>(std::max(1, engine.config().max_queued_requests));
  if (inputs <= std::min(kMaxEmbeddingInputs, queue)) return absl::OkStatus();
  return InvalidField(inputs_field, queue < kMaxEmbeddingInputs && inputs <= kMaxEmbeddingInputs
                                        ? absl::StrCat(inputs, " inputs exceed the ", queue, " requests this server queues at most (--max_queued_requests)")
                                        : absl::StrCat(inputs, " inputs exceed the limit of ", kMaxEmbeddingInputs));
}

std::string EmbeddingInputText(const Engine& engine, std::string text) {
  const EmbeddingConfig& config = engine.embedding_config();
  if (!config.default_prompt.empty()) text.insert(0, config.default_prompt);
  return config.lowercase ? PythonLower(text) : std::move(text);
}

std::vector<float> AnsweredEmbedding(std::span<const float> hidden, std::optional<int64_t> dimensions, bool normalize) {
  const size_t kept = dimensions ? std::min(hidden.size(), static_cast<size_t>(std::max<int64_t>(0, *dimensions))) : hidden.size();
  std::vector<float> out(hidden.begin(), hidden.begin() + static_cast<std::ptrdiff_t>(kept));
  if (!normalize) return out;
  double sum_of_squares = 0;
  for (float v : out) sum_of_squares += static_cast<double>(v) * v;
  const double norm = std::sqrt(sum_of_squares);
  if (norm > 0) {
    for (float& v : out) v = static_cast<float>(v / norm);
  }
  return out;
}

}  // namespace arach::server
