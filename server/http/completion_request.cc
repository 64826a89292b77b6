#include "server/http/completion_request.h"

#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/http/prediction_request.h"
#include "server/http/request_fields.h"
#include "server/json_body.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

// The field `key` of `body`, or nullptr when absent or null.
const json* Field(const json& body, const std::string& key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

template <typename T>
absl::Status ReadNumber(const json& body, const std::string& key, std::optional<T>* out) {
  const json* v = Field(body, key);
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_number()) return InvalidField(key, "must be a number");
  const double d = v->get<double>();
  if (!std::isfinite(d)) return InvalidField(key, "must be finite");
  if constexpr (std::is_same_v<T, float>) {
    if (std::abs(d) > std::numeric_limits<float>::max()) return InvalidField(key, "is out of range");
  }
  if constexpr (std::is_integral_v<T>) {
    if (!v->is_number_integer()) return InvalidField(key, "must be an integer");
    if (d < static_cast<double>(std::numeric_limits<T>::min()) || d > static_cast<double>(std::numeric_limits<T>::max())) {
      return InvalidField(key, "is out of range");
    }
  }
  *out = static_cast<T>(v->is_number_integer() ? static_cast<double>(v->get<int64_t>()) : d);
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (!v->is_number_unsigned()) return InvalidField(key, "must be an integer >= 0");
    *out = v->get<uint64_t>();
  }
  return absl::OkStatus();
}

// A number of log-prob alternatives per token (logprobs, top_logprobs, prompt_logprobs): 0..kMaxTopLogprobs.
absl::Status CheckAlternatives(const char* param, int n) {
  if (n >= 0 && n <= SamplingParams::kMaxTopLogprobs) return absl::OkStatus();
  return InvalidField(param, absl::StrCat(n, " must be in [0, ", SamplingParams::kMaxTopLogprobs, "]"));
}

absl::StatusOr<std::vector<int32_t>> ReadIds(const json& list, const std::string& param) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_number_integer()) return InvalidField(absl::StrCat(param, "[", i, "]"), "must be a token id (an integer)");
    const int64_t id = list[i].get<int64_t>();
    if (id < INT32_MIN || id > INT32_MAX) return InvalidField(absl::StrCat(param, "[", i, "]"), "is out of range");
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

}  // namespace

absl::StatusOr<std::vector<PromptInput>> ReadPromptInputs(const json& body, const std::string& param) {
  const json* prompt = Field(body, param);
  if (prompt == nullptr) return InvalidField(param, "is required");
  if (prompt->is_string()) return std::vector<PromptInput>{{prompt->get<std::string>(), {}}};
  if (!prompt->is_array() || prompt->empty()) return InvalidField(param, "must be a string, token ids, or a non-empty list of either");
  if ((*prompt)[0].is_number()) {
    ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> ids, ReadIds(*prompt, param));
    return std::vector<PromptInput>{{std::nullopt, std::move(ids)}};
  }
  std::vector<PromptInput> prompts;
  for (size_t i = 0; i < prompt->size(); ++i) {
    const json& item = (*prompt)[i];
    if (item.is_string()) {
      prompts.push_back({item.get<std::string>(), {}});
    } else if (item.is_array()) {
      ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> ids, ReadIds(item, absl::StrCat(param, "[", i, "]")));
      prompts.push_back({std::nullopt, std::move(ids)});
    } else {
      return InvalidField(absl::StrCat(param, "[", i, "]"), "must be a string or a list of token ids");
    }
  }
  return prompts;
}

std::string OpenAiFieldName(absl::string_view engine_field) {
  if (engine_field == "top_logprobs" || engine_field == "prompt_top_logprobs") return "logprobs";
  if (engine_field == "variant") return "model";
  return std::string(engine_field);
}

absl::StatusOr<GenerationFields> ParseGenerationFields(const json& body, const std::vector<std::string>& max_tokens_keys) {
  GenerationFields f;
  const json* model = Field(body, "model");
  if (model == nullptr || !model->is_string() || model->get<std::string>().empty()) return InvalidField("model", "is required (a string)");
  f.model = model->get<std::string>();

  std::optional<int> n, logprobs, max_tokens, top_k, min_tokens;
  std::optional<bool> stream, ignore_eos, arach, skip, skip_special, diagnostics, include_stop, token_ids_as_names, token_ids;
  std::optional<float> temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty, arach_offset;
  std::optional<uint64_t> seed;
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "n", &n));
  ARACH_ASSIGN_OR_RETURN(stream, OptionalBoolAt(body, "stream"));
  for (const std::string& key : max_tokens_keys) {
    if (max_tokens) break;
    ARACH_RETURN_IF_ERROR(ReadNumber(body, key, &max_tokens));
  }
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "temperature", &temperature));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "top_p", &top_p));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "top_k", &top_k));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "min_p", &min_p));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "repetition_penalty", &repetition_penalty));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "presence_penalty", &presence_penalty));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "frequency_penalty", &frequency_penalty));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "seed", &seed));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "min_tokens", &min_tokens));
  ARACH_ASSIGN_OR_RETURN(ignore_eos, OptionalBoolAt(body, "ignore_eos"));
  ARACH_ASSIGN_OR_RETURN(skip_special, OptionalBoolAt(body, "skip_special_tokens"));
  ARACH_ASSIGN_OR_RETURN(arach, OptionalBoolAt(body, "arach"));
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "arach_offset", &arach_offset));
  ARACH_ASSIGN_OR_RETURN(skip, OptionalBoolAt(body, "skip"));
  ARACH_ASSIGN_OR_RETURN(diagnostics, OptionalBoolAt(body, "diagnostics"));
  ARACH_ASSIGN_OR_RETURN(include_stop, OptionalBoolAt(body, "include_stop_str_in_output"));
  ARACH_ASSIGN_OR_RETURN(token_ids_as_names, OptionalBoolAt(body, "return_tokens_as_token_ids"));
  ARACH_ASSIGN_OR_RETURN(token_ids, OptionalBoolAt(body, "return_token_ids"));

  f.n = n.value_or(1);
  if (f.n < 1 || f.n > 16) return InvalidField("n", absl::StrCat(f.n, " must be in [1, 16]"));
  f.stream = stream.value_or(false);
  if (const json* options = Field(body, "stream_options"); options != nullptr) {
    if (!options->is_object()) return InvalidField("stream_options", "must be an object");
    if (!f.stream) return InvalidField("stream_options", "is only allowed when stream is true");
    for (const auto& [key, value] : options->items()) {
      if (key != "include_usage" && key != "continuous_usage_stats") return KeyError("stream_options", key, "is not a known parameter");
    }
    std::optional<bool> include_usage, continuous_usage;
    ARACH_ASSIGN_OR_RETURN(include_usage, OptionalBoolAt(*options, "include_usage", "stream_options.include_usage"));
    ARACH_ASSIGN_OR_RETURN(continuous_usage, OptionalBoolAt(*options, "continuous_usage_stats", "stream_options.continuous_usage_stats"));
    f.include_usage = include_usage.value_or(false);
    f.continuous_usage = continuous_usage.value_or(false);
    if (f.continuous_usage && !f.include_usage) {
      return InvalidField("stream_options.continuous_usage_stats", "needs stream_options.include_usage true");
    }
  }
  SamplingParams& sp = f.sampling;
  if (max_tokens) sp.max_tokens = *max_tokens;
  f.max_tokens_given = max_tokens.has_value();
  if (temperature) sp.temperature = *temperature;
  if (top_p) sp.top_p = *top_p;
  if (top_k) sp.top_k = *top_k == -1 ? 0 : *top_k;  // -1 means off (vLLM)
  if (min_p) sp.min_p = *min_p;
  if (repetition_penalty) sp.repetition_penalty = *repetition_penalty;
  if (presence_penalty) sp.presence_penalty = *presence_penalty;
  if (frequency_penalty) sp.frequency_penalty = *frequency_penalty;
  if (seed) sp.seed = *seed;
  if (min_tokens) sp.min_tokens = *min_tokens;
  sp.ignore_eos = ignore_eos.value_or(false);
  f.skip_special_tokens = skip_special.value_or(true);
  f.diagnostics = diagnostics.value_or(false);
  f.return_tokens_as_token_ids = token_ids_as_names.value_or(false);
  f.return_token_ids = token_ids.value_or(false);
  if (const json* stop = Field(body, "stop"); stop != nullptr) {
    if (stop->is_string()) {
      sp.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (size_t i = 0; i < stop->size(); ++i) {
        if (!(*stop)[i].is_string()) return InvalidField(absl::StrCat("stop[", i, "]"), "must be a string");
        sp.stop.push_back((*stop)[i].get<std::string>());
      }
    } else {
      return InvalidField("stop", "must be a string or a list of strings");
    }
  }
  sp.include_stop_str_in_output = include_stop.value_or(false);
  if (const json* salt = Field(body, "cache_salt"); salt != nullptr) {
    if (!salt->is_string() || salt->get_ref<const std::string&>().empty()) return InvalidField("cache_salt", "must be a non-empty string");
    f.cache_salt = salt->get<std::string>();
  }
  if (const json* ids = Field(body, "stop_token_ids"); ids != nullptr) {
    if (!ids->is_array()) return InvalidField("stop_token_ids", "must be a list of token ids");
    ARACH_ASSIGN_OR_RETURN(sp.stop_token_ids, ReadIds(*ids, "stop_token_ids"));
  }
  if (const json* bias = Field(body, "logit_bias"); bias != nullptr) {
    if (!bias->is_object()) return InvalidField("logit_bias", "must be an object of token id -> bias");
    for (const auto& [key, value] : bias->items()) {
      int32_t token;
      if (!absl::SimpleAtoi(key, &token)) return InvalidField("logit_bias", absl::StrCat("key \"", key, "\" is not a token id"));
      if (!value.is_number()) return InvalidField("logit_bias", absl::StrCat("the bias of ", key, " must be a number"));
      sp.logit_bias.emplace_back(token, value.get<float>());
    }
  }
  if (const json* allowed = Field(body, "allowed_token_ids"); allowed != nullptr) {
    if (!allowed->is_array() || allowed->empty()) return InvalidField("allowed_token_ids", "must be a non-empty list of token ids");
    ARACH_ASSIGN_OR_RETURN(sp.allowed_token_ids, ReadIds(*allowed, "allowed_token_ids"));
  }
  if (const json* bad = Field(body, "bad_words"); bad != nullptr) {
    if (!bad->is_array()) return InvalidField("bad_words", "must be a list of strings");
    for (size_t i = 0; i < bad->size(); ++i) {
      if (!(*bad)[i].is_string()) return InvalidField(absl::StrCat("bad_words[", i, "]"), "must be a string");
      sp.bad_words.push_back((*bad)[i].get<std::string>());
    }
  }
  // Chat style: logprobs true and top_logprobs alternatives (request_fields.h refuses top_logprobs on completions).
  std::optional<int> top_logprobs;
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "top_logprobs", &top_logprobs));
  const json* lp = Field(body, "logprobs");
  const bool chat_logprobs = lp != nullptr && lp->is_boolean() && lp->get<bool>();
  if (top_logprobs && !chat_logprobs) return InvalidField("top_logprobs", "needs \"logprobs\": true");
  if (chat_logprobs) {
    logprobs = top_logprobs.value_or(0);
  } else if (lp != nullptr && !lp->is_boolean()) {
    ARACH_RETURN_IF_ERROR(ReadNumber(body, "logprobs", &logprobs));
  }
  if (logprobs) {
    ARACH_RETURN_IF_ERROR(CheckAlternatives(top_logprobs ? "top_logprobs" : "logprobs", *logprobs));
    f.logprobs = logprobs;
    sp.logprobs = true;
    sp.top_logprobs = *logprobs;
  }
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "prompt_logprobs", &f.prompt_logprobs));
  if (f.prompt_logprobs) {
    ARACH_RETURN_IF_ERROR(CheckAlternatives("prompt_logprobs", *f.prompt_logprobs));
    if (f.stream) return InvalidField("prompt_logprobs", "is not available with stream (the prompt's log-probs come whole); ask without stream");
  }
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "truncate_prompt_tokens", &f.truncate_prompt_tokens));
  if (f.truncate_prompt_tokens && *f.truncate_prompt_tokens < 1 && *f.truncate_prompt_tokens != -1) {
    return InvalidField("truncate_prompt_tokens", absl::StrCat(*f.truncate_prompt_tokens, " must be -1 (the model's context) or at least 1"));
  }
  f.variant.arach = arach;
  f.variant.arach_offset = arach_offset;
  f.variant.skip = skip;
  ARACH_RETURN_IF_ERROR(ReadNumber(body, "priority", &f.priority));
  ARACH_ASSIGN_OR_RETURN(f.structured_output, ParseStructuredOutput(body));
  ARACH_ASSIGN_OR_RETURN(f.prediction, ReadPrediction(body));
  if (const json* key = Field(body, "experiment_key"); key != nullptr) {
    if (!key->is_string()) return InvalidField("experiment_key", "must be a string");
    f.variant.experiment_key = key->get<std::string>();
  } else {
    // OpenAI's end-user identifiers, the newer one (safety_identifier, which replaces `user`) last: a sticky
    // A/B assignment per end user where the request names no experiment key.
    for (const char* key : {"user", "safety_identifier"}) {
      const json* id = Field(body, key);
      if (id == nullptr) continue;
      if (!id->is_string()) return InvalidField(key, "must be a string");
      f.variant.experiment_key = id->get<std::string>();
      break;
    }
  }
  return f;
}

absl::StatusOr<CompletionRequest> ParseCompletionRequest(const std::string& body_text) {
  ARACH_ASSIGN_OR_RETURN(const json body, ParseJson(body_text, "body"));
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  ARACH_RETURN_IF_ERROR(CheckRequestParameters(body, OpenAiRoute::kCompletions));
  CompletionRequest request;
  ARACH_ASSIGN_OR_RETURN(request.fields, ParseGenerationFields(body, {"max_tokens"}));
  ARACH_ASSIGN_OR_RETURN(request.prompts, ReadPromptInputs(body, "prompt"));
  std::optional<bool> echo;
  ARACH_ASSIGN_OR_RETURN(echo, OptionalBoolAt(body, "echo"));
  request.echo = echo.value_or(false);
  if (const json* max_tokens = Field(body, "max_tokens"); max_tokens != nullptr && max_tokens->is_number_integer() &&
                                                           max_tokens->get<int64_t>() == 0) {
    if (!request.echo) return InvalidField("max_tokens", "0 is only allowed with echo (scoring the prompt)");
    request.score_only = true;
  }
  if (request.fields.stream && request.score_only) return InvalidField("stream", "is not supported when scoring (max_tokens 0)");
  if (const json* suffix = Field(body, "suffix"); suffix != nullptr && !(suffix->is_string() && suffix->get<std::string>().empty())) {
    if (!suffix->is_string()) return InvalidField("suffix", "must be a string");
    if (request.echo) return InvalidField("echo", "is not supported with suffix");
    for (const PromptInput& prompt : request.prompts) {
      if (!prompt.text) return InvalidField("suffix", "needs text prompts (the model's markers go around the text)");
    }
    request.suffix = suffix->get<std::string>();
  }
  return request;
}

}  // namespace arach::server::http
