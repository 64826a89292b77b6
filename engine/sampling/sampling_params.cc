#include "engine/sampling/sampling_params.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach {

absl::Status SamplingParams::Validate(int vocab_size, FieldNames names) const {
  auto bad = [&](absl::string_view field, auto value, absl::string_view rule) {
    return InvalidField(names, field, absl::StrCat(value, " ", rule));
  };
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) return bad("temperature", temperature, "must be >= 0");
  if (top_k < 0) return bad("top_k", top_k, "must be >= 0 (0 = off)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) return bad("top_p", top_p, "must be in (0, 1]");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return bad("min_p", min_p, "must be in [0, 1]");
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return bad("repetition_penalty", repetition_penalty, "must be > 0");
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) return bad("presence_penalty", presence_penalty, "must be in [-2, 2]");
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return bad("frequency_penalty", frequency_penalty, "must be in [-2, 2]");
  }
  if (logit_bias.size() > static_cast<size_t>(kMaxLogitBias)) {
    return bad("logit_bias", logit_bias.size(), absl::StrCat("entries exceed the limit of ", kMaxLogitBias));
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= vocab_size) {
      return InvalidField(names, "logit_bias", absl::StrCat("token id ", token, " is outside the vocabulary [0, ", vocab_size, ")"));
    }
    if (!(bias >= -100.0f && bias <= 100.0f)) return InvalidField(names, "logit_bias", absl::StrCat("bias ", bias, " must be in [-100, 100]"));
  }
  if (max_tokens < 1) return bad("max_tokens", max_tokens, "must be >= 1");
  if (min_tokens < 0 || min_tokens > max_tokens) return bad("min_tokens", min_tokens, "must be in [0, max_tokens]");
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return bad("top_logprobs", top_logprobs, absl::StrCat("must be in [0, ", kMaxTopLogprobs, "]"));
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return InvalidFieldAt(names, "stop", i, "empty stop string");
  }
  ARACH_RETURN_IF_ERROR(CheckTokenIds(allowed_token_ids, vocab_size, "allowed_token_ids", names));
  return CheckTokenIds(stop_token_ids, vocab_size, "stop_token_ids", names);
}

}  // namespace arach
