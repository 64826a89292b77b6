#include "server/request_mapping.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach::server {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

}  // namespace

namespace {

absl::Status CheckPromptTokens(const Engine& engine, const RequestLimits& limits, const std::string& field, size_t count) {
  const size_t limit = limits.max_prompt_tokens > 0 ? static_cast<size_t>(limits.max_prompt_tokens)
                                                    : static_cast<size_t>(engine.model_config().max_positions);
  if (count > limit) {
    return FieldError(field, absl::StrCat(count, " tokens exceed the limit of ", limit,
                                          limits.max_prompt_tokens > 0 ? " (--max_prompt_tokens)" : " (the model's context)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> PromptIds(const Engine& engine, const RequestLimits& limits, const std::string& field,
                                               bool has_text, const std::string& text, bool has_ids,
                                               const arach::v1::TokenIds& ids) {
  const int vocab = engine.model_config().vocab_size;
  if (has_text) {
    if (text.empty()) return FieldError(field + ".text", "empty");
    if (text.size() > limits.max_prompt_bytes) {
      return FieldError(field + ".text", absl::StrCat(text.size(), " bytes exceed the limit of ", limits.max_prompt_bytes));
    }
    auto encoded = EncodePrompt(engine.tokenizer(), text, engine.model_config().bos_token_id);
    if (!encoded.ok()) return FieldError(field + ".text", encoded.status().message());
    if (encoded->empty()) return FieldError(field + ".text", "encodes to no tokens");
    ARACH_RETURN_IF_ERROR(CheckPromptTokens(engine, limits, field + ".text", encoded->size()));
    return encoded;
  }
  if (has_ids) {
    if (ids.ids_size() == 0) return FieldError(field + ".token_ids", "empty");
    ARACH_RETURN_IF_ERROR(CheckPromptTokens(engine, limits, field + ".token_ids", static_cast<size_t>(ids.ids_size())));
    std::vector<int32_t> out(ids.ids().begin(), ids.ids().end());
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] < 0 || out[i] >= vocab) {
        return FieldError(absl::StrCat(field, ".token_ids[", i, "]"),
                          absl::StrCat("token id ", out[i], " is outside the vocabulary [0, ", vocab, ")"));
      }
    }
    return out;
  }
  return FieldError(field, "set text or token_ids");
}

absl::StatusOr<GenerateRequest> ToEngineRequest(const Engine& engine, const RequestLimits& limits,
                                                const arach::v1::GenerateRequest& r, const Variant& variant) {
  GenerateRequest out;
  ARACH_ASSIGN_OR_RETURN(out.prompt, PromptIds(engine, limits, "prompt", r.prompt_case() == arach::v1::GenerateRequest::kText,
                                               r.text(), r.prompt_case() == arach::v1::GenerateRequest::kTokenIds,
                                               r.token_ids()));
  SamplingParams& sp = out.sampling;
  const arach::v1::SamplingParams& s = r.sampling();
  if (s.has_temperature()) sp.temperature = s.temperature();
  if (s.has_top_k()) sp.top_k = s.top_k();
  if (s.has_top_p()) sp.top_p = s.top_p();
  if (s.has_min_p()) sp.min_p = s.min_p();
  if (s.has_repetition_penalty()) sp.repetition_penalty = s.repetition_penalty();
  if (s.has_seed()) sp.seed = s.seed();
  if (!(sp.temperature >= 0.0f) || !std::isfinite(sp.temperature)) return FieldError("sampling.temperature", "must be >= 0");
  if (sp.top_k < 0) return FieldError("sampling.top_k", "must be >= 0 (0 = off)");
  if (!(sp.top_p > 0.0f && sp.top_p <= 1.0f)) return FieldError("sampling.top_p", "must be in (0, 1]");
  if (!(sp.min_p >= 0.0f && sp.min_p <= 1.0f)) return FieldError("sampling.min_p", "must be in [0, 1]");
  if (!(sp.repetition_penalty > 0.0f) || !std::isfinite(sp.repetition_penalty)) {
    return FieldError("sampling.repetition_penalty", "must be > 0");
  }
  if (r.has_max_tokens()) {
    if (r.max_tokens() == 0) return FieldError("max_tokens", "must be >= 1");
    if (r.max_tokens() > static_cast<uint32_t>(limits.max_tokens)) {
      return FieldError("max_tokens", absl::StrCat(r.max_tokens(), " exceeds the limit of ", limits.max_tokens));
    }
    sp.max_tokens = static_cast<int>(r.max_tokens());
  }
  if (r.min_tokens() > static_cast<uint32_t>(sp.max_tokens)) return FieldError("min_tokens", "must not exceed max_tokens");
  sp.min_tokens = static_cast<int>(r.min_tokens());
  if (r.stop_size() > limits.max_stop_strings) {
    return FieldError("stop", absl::StrCat(r.stop_size(), " stop strings exceed the limit of ", limits.max_stop_strings));
  }
  for (int i = 0; i < r.stop_size(); ++i) {
    if (r.stop(i).empty()) return FieldError(absl::StrCat("stop[", i, "]"), "empty");
    if (r.stop(i).size() > limits.max_stop_bytes) {
      return FieldError(absl::StrCat("stop[", i, "]"), absl::StrCat("longer than ", limits.max_stop_bytes, " bytes"));
    }
    sp.stop.push_back(r.stop(i));
  }
  if (r.stop_token_ids_size() > limits.max_stop_token_ids) {
    return FieldError("stop_token_ids", absl::StrCat("more than ", limits.max_stop_token_ids, " ids"));
  }
  for (int i = 0; i < r.stop_token_ids_size(); ++i) {
    const int32_t id = r.stop_token_ids(i);
    if (id < 0 || id >= engine.model_config().vocab_size) {
      return FieldError(absl::StrCat("stop_token_ids[", i, "]"), absl::StrCat(id, " is outside the vocabulary"));
    }
    sp.stop_token_ids.push_back(id);
  }
  sp.ignore_eos = r.ignore_eos();
  sp.logprobs = r.logprobs();
  if (r.top_logprobs() > static_cast<uint32_t>(SamplingParams::kMaxTopLogprobs)) {
    return FieldError("top_logprobs", absl::StrCat("must be at most ", SamplingParams::kMaxTopLogprobs));
  }
  sp.top_logprobs = static_cast<int>(r.top_logprobs());
  if (variant.arach && !std::isfinite(variant.arach_offset)) return FieldError("variant.arach_offset", "must be finite");
  out.variant = variant;
  return out;
}

arach::v1::GenerateResponse ToResponse(const StreamChunk& chunk, bool with_logprobs) {
  arach::v1::GenerateResponse response;
  for (const SampledToken& t : chunk.tokens) {
    response.add_token_ids(t.token);
    if (!with_logprobs) continue;
    arach::v1::TokenLogprob* lp = response.add_logprobs();
    lp->set_token_id(t.token);
    lp->set_logprob(t.logprob);
    for (const TokenLogprob& top : t.top) {
      arach::v1::TopLogprob* entry = lp->add_top();
      entry->set_token_id(top.token);
      entry->set_logprob(top.logprob);
    }
  }
  response.set_text(chunk.text);
  return response;
}

void FillFinish(const FinishInfo& info, const ResolvedVariant& variant, const std::string& request_id, arach::v1::Finish* out) {
  out->set_reason(info.reason == FinishReason::kLength ? arach::v1::FINISH_REASON_LENGTH : arach::v1::FINISH_REASON_STOP);
  out->set_stop_string(info.stop_string);
  arach::v1::Usage* usage = out->mutable_usage();
  usage->set_prompt_tokens(info.usage.prompt_tokens);
  usage->set_completion_tokens(info.usage.completion_tokens);
  usage->set_cached_prompt_tokens(info.usage.cached_prompt_tokens);
  usage->set_preemptions(info.usage.preemptions);
  arach::v1::Timings* timings = out->mutable_timings();
  timings->set_queue_seconds(info.timings.queue_seconds);
  timings->set_time_to_first_token_seconds(info.timings.time_to_first_token_seconds);
  timings->set_time_per_output_token_seconds(info.timings.time_per_output_token_seconds);
  timings->set_total_seconds(info.timings.total_seconds);
  FillServedVariant(variant, out->mutable_variant());
  out->set_request_id(request_id);
}

}  // namespace arach::server
