#include "server/request_limits.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"

namespace arach::server {
absl::Status CheckPromptTokens(const RequestLimits& limits, const std::string& field, size_t count) {
  if (limits.max_prompt_tokens > 0 && count > static_cast<size_t>(limits.max_prompt_tokens)) {
    return InvalidField(field, absl::StrCat(count, " tokens exceed the limit of ", limits.max_prompt_tokens, " (--max_prompt_tokens)"));
  }
  return absl::OkStatus();
}

int DefaultChatMaxTokens(const RequestLimits& limits, const Engine& engine, const KeyLimits& key, size_t prompt_tokens, int choices) {
  const int prompt = static_cast<int>(std::min<size_t>(prompt_tokens, std::numeric_limits<int>::max()));
  int64_t most = std::min(limits.max_tokens, engine.MaxNewTokens(prompt));
  // The prompt counts once, each choice's tokens on their own (as the tokens-per-minute check and the usage count them).
  if (key.tokens_per_minute > 0) most = std::min(most, (key.tokens_per_minute - prompt) / std::max(1, choices));
  return static_cast<int>(std::max<int64_t>(1, most));
}

absl::Status CheckAnswerLogprobs(const RequestLimits& limits, const std::vector<EngineRequest>& requests, const std::string& field,
                                 bool streamed) {
  int64_t values = 0;  // log-probs in the answer (a stream: in its largest chunk): each token's own, its alternatives, and
                       // (completions) the chosen one among them
  bool scores_prompts = false;  // a prompt's log-probs come whole (a whole answer: at the end): streaming does not help
  for (const EngineRequest& r : requests) {
    scores_prompts = scores_prompts || r.wants_prompt_logprobs();
    const int64_t prompt_values = r.wants_prompt_logprobs() ? static_cast<int64_t>(r.prompt.size()) * (2 + r.prompt_top_logprobs) : 0;
    if (streamed) {  // a choice's first chunk: its prompt's, and a token's (not counted: a chunk holds a few at most)
      values = std::max(values, prompt_values);
      continue;
    }
    values += prompt_values;
    if (r.kind == RequestKind::kGenerate && r.sampling.logprobs) values += static_cast<int64_t>(r.sampling.max_tokens) * (2 + r.sampling.top_logprobs);
  }
  const int64_t bytes = values * kMinBytesPerLogprob;
  if (bytes <= static_cast<int64_t>(limits.max_response_bytes)) return absl::OkStatus();
  return InvalidField(field, absl::StrCat(streamed ? "a choice's first chunk would hold " : "the answer would hold ", values,
                                          " log-probs (", bytes >> 20, " MiB at least), over the ", limits.max_response_bytes >> 20,
                                          " MiB of --max_response_bytes; ask for fewer alternatives, ",
                                          streamed ? "or a shorter prompt" : "tokens or prompts", scores_prompts ? "" : ", or stream it"));
}

absl::Status CheckSamplingLimits(const RequestLimits& limits, const SamplingParams& sp, FieldNames names) {
  if (sp.max_tokens > limits.max_tokens) {
    return InvalidField(names, "max_tokens", absl::StrCat(sp.max_tokens, " exceeds the limit of ", limits.max_tokens));
  }
  if (sp.stop.size() > static_cast<size_t>(limits.max_stop_strings)) {
    return InvalidField(names, "stop", absl::StrCat(sp.stop.size(), " stop strings exceed the limit of ", limits.max_stop_strings));
  }
  for (size_t i = 0; i < sp.stop.size(); ++i) {
    if (sp.stop[i].size() > limits.max_stop_bytes) {
      return InvalidFieldAt(names, "stop", i, absl::StrCat("longer than ", limits.max_stop_bytes, " bytes"));
    }
  }
  if (sp.stop_token_ids.size() > static_cast<size_t>(limits.max_stop_token_ids)) {
    return InvalidField(names, "stop_token_ids", absl::StrCat("more than ", limits.max_stop_token_ids, " ids"));
  }
  if (sp.bad_words.size() > static_cast<size_t>(limits.max_bad_words)) {
    return InvalidField(names, "bad_words", absl::StrCat(sp.bad_words.size(), " words exceed the limit of ", limits.max_bad_words));
  }
  for (size_t i = 0; i < sp.bad_words.size(); ++i) {
    if (sp.bad_words[i].size() > limits.max_bad_word_bytes) {
      return InvalidFieldAt(names, "bad_words", i, absl::StrCat("longer than ", limits.max_bad_word_bytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> EncodeTextPrompt(const Engine& engine, const RequestLimits& limits, const std::string& field,
                                                      const std::string& text) {
  if (text.empty()) return InvalidField(field, "empty");
  if (text.size() > limits.max_prompt_bytes) {
    return InvalidField(field, absl::StrCat(text.size(), " bytes exceed the limit of ", limits.max_prompt_bytes));
  }
  auto encoded = EncodePrompt(engine.tokenizer(), text);
  if (!encoded.ok()) return InvalidField(field, encoded.status().message());
  if (encoded->empty()) return InvalidField(field, "encodes to no tokens");
  ARACH_RETURN_IF_ERROR(CheckPromptTokens(limits, field, encoded->size()));
  return encoded;
}

absl::StatusOr<std::vector<int32_t>> EncodePrediction(const Engine& engine, const std::string& text) {
  absl::StatusOr<std::vector<int32_t>> ids = engine.tokenizer().Encode(text, /*add_special_tokens=*/false);
  if (!ids.ok()) return InvalidField("prediction", ids.status().message());
  return ids;
}

absl::StatusOr<bool> TruncatePrompt(std::optional<int> keep, int max_model_len, std::vector<int32_t>& ids) {
  if (!keep) return false;
  const int kept = *keep == -1 ? max_model_len : *keep;
  if (kept > max_model_len) {
    return InvalidField("truncate_prompt_tokens", absl::StrCat(kept, " exceeds the model's context of ", max_model_len, " tokens"));
  }
  if (ids.size() <= static_cast<size_t>(kept)) return false;
  ids.erase(ids.begin(), ids.end() - kept);
  return true;
}

}  // namespace arach::server
