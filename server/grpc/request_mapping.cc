#include "server/grpc/request_mapping.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/chat_prompt.h"
#include "server/fill_in_middle.h"
#include "server/json_body.h"
#include "server/request_log.h"

namespace arach::server {
namespace {

int ClampToInt(uint32_t value) { return static_cast<int>(std::min<uint32_t>(value, std::numeric_limits<int>::max())); }

}  // namespace

std::string GrpcFieldName(absl::string_view engine_field, const std::string& prompt_field) {
  if (engine_field == "prompt") return prompt_field;
  if (engine_field == "arach_offset") return "variant.arach_offset";
  if (engine_field == "lora") return "variant.lora";
  if (engine_field == "constraint") return "structured_output";
  for (const char* sampling : {"temperature", "top_k", "top_p", "min_p", "repetition_penalty", "seed", "presence_penalty",
                               "frequency_penalty", "logit_bias", "allowed_token_ids", "bad_words"}) {
    if (engine_field == sampling) return absl::StrCat("sampling.", engine_field);
  }
  return std::string(engine_field);  // max_tokens, min_tokens, stop, stop_token_ids, top_logprobs, variant
}

absl::StatusOr<std::vector<int32_t>> PromptIds(const Engine& engine, const RequestLimits& limits, const std::string& field,
                                               bool has_text, const std::string& text, bool has_ids,
                                               const arach::v1::TokenIds& ids, std::string* prompt_field) {
  if (has_text) {
    *prompt_field = field + ".text";
    return EncodeTextPrompt(engine, limits, *prompt_field, text);
  }
  if (has_ids) {
    *prompt_field = field + ".token_ids";
    ARACH_RETURN_IF_ERROR(CheckPromptTokens(limits, *prompt_field, static_cast<size_t>(ids.ids_size())));
    return std::vector<int32_t>(ids.ids().begin(), ids.ids().end());
  }
  *prompt_field = field;
  return InvalidField(field, "set text or token_ids");
}

absl::StatusOr<EngineRequest> ToEngineRequest(const Engine& engine, const RequestLimits& limits,
                                              const arach::v1::GenerateRequest& r, const Variant& variant,
                                              std::string* prompt_field) {
  EngineRequest out;
  const bool has_text = r.prompt_case() == arach::v1::GenerateRequest::kText;
  std::optional<FillInMiddle> fim;  // with a suffix: the prompt and the suffix in the model's markers
  if (!r.suffix().empty()) {
    if (!has_text) return InvalidField("suffix", "needs a text prompt (the model's markers go around the text)");
    ARACH_ASSIGN_OR_RETURN(fim, FillInMiddlePrompt(engine.tokenizer(), r.text(), r.suffix(), "suffix"));
  }
  ARACH_ASSIGN_OR_RETURN(out.prompt, PromptIds(engine, limits, "prompt", has_text, fim ? fim->prompt : r.text(),
                                               r.prompt_case() == arach::v1::GenerateRequest::kTokenIds, r.token_ids(), prompt_field));
  SamplingParams& sp = out.sampling;
  const arach::v1::SamplingParams& s = r.sampling();
  if (s.has_temperature()) sp.temperature = s.temperature();
  if (s.has_top_k()) sp.top_k = s.top_k();
  if (s.has_top_p()) sp.top_p = s.top_p();
  if (s.has_min_p()) sp.min_p = s.min_p();
  if (s.has_repetition_penalty()) sp.repetition_penalty = s.repetition_penalty();
  if (s.has_seed()) sp.seed = s.seed();
  if (s.has_presence_penalty()) sp.presence_penalty = s.presence_penalty();
  if (s.has_frequency_penalty()) sp.frequency_penalty = s.frequency_penalty();
  for (const auto& [token, bias] : s.logit_bias()) sp.logit_bias.emplace_back(token, bias);
  std::sort(sp.logit_bias.begin(), sp.logit_bias.end());  // a map's order is unspecified
  sp.allowed_token_ids.assign(s.allowed_token_ids().begin(), s.allowed_token_ids().end());
  sp.bad_words.assign(s.bad_words().begin(), s.bad_words().end());
  if (r.has_max_tokens()) sp.max_tokens = ClampToInt(r.max_tokens());
  sp.min_tokens = ClampToInt(r.min_tokens());
  sp.stop.assign(r.stop().begin(), r.stop().end());
  sp.include_stop_str_in_output = r.include_stop_str_in_output();
  sp.stop_token_ids.assign(r.stop_token_ids().begin(), r.stop_token_ids().end());
  ARACH_RETURN_IF_ERROR(CheckSamplingLimits(limits, sp));
  sp.ignore_eos = r.ignore_eos();
  if (fim) AddFillInMiddleEnds(*fim, &sp);
  if (r.has_skip_special_tokens()) sp.skip_special_tokens = r.skip_special_tokens();
  sp.logprobs = r.logprobs();
  sp.top_logprobs = ClampToInt(r.top_logprobs());
  ARACH_ASSIGN_OR_RETURN(out.constraint, ToOutputConstraint(r.structured_output()));
  if (!r.prediction().empty()) {
    ARACH_ASSIGN_OR_RETURN(out.prediction, EncodePrediction(engine, r.prediction()));
  }
  out.variant = variant;
  return out;
}

absl::StatusOr<OutputConstraint> ToOutputConstraint(const arach::v1::StructuredOutput& s) {
  using Kind = arach::v1::StructuredOutput;
  if (s.has_strict() && s.kind_case() != Kind::kJsonSchema) {
    return InvalidField("structured_output.strict", "applies to json_schema only");
  }
  switch (s.kind_case()) {
    case Kind::kJsonSchema:
      // Parsed here as every JSON field of a client is (json_body.h), so that broken JSON is named as
      // structured_output.json_schema (the constraint compiler bounds nesting again for every API).
      ARACH_RETURN_IF_ERROR(ParseJson(s.json_schema(), "structured_output.json_schema").status());
      return OutputConstraint::JsonSchema(s.json_schema(), !s.has_strict() || s.strict());
    case Kind::kJsonObject:
      if (!s.json_object()) return InvalidField("structured_output.json_object", "set it true, or set no kind");
      return OutputConstraint::JsonObject();
    case Kind::kRegex: return OutputConstraint::Regex(s.regex());
    case Kind::kChoice: return OutputConstraint::Choice({s.choice().choices().begin(), s.choice().choices().end()});
    case Kind::kGrammar: return OutputConstraint::Grammar(s.grammar());
    case Kind::KIND_NOT_SET: break;
  }
  return OutputConstraint{};
}

namespace {

absl::StatusOr<nlohmann::ordered_json> ParseJsonField(const std::string& text, const std::string& field, bool want_object) {
  ARACH_ASSIGN_OR_RETURN(nlohmann::ordered_json parsed, ParseOrderedJson(text, field));
  if (want_object ? !parsed.is_object() : !parsed.is_array()) return InvalidField(field, want_object ? "must be a JSON object" : "must be a JSON list");
  return parsed;
}

}  // namespace

absl::StatusOr<ChatInput> ToChatInput(const arach::v1::ChatRequest& r) {
  ChatInput input;
  if (r.messages_size() == 0) return InvalidField("messages", "is required (a non-empty list)");
  for (int i = 0; i < r.messages_size(); ++i) {
    const arach::v1::ChatMessage& m = r.messages(i);
    const std::string field = absl::StrCat("messages[", i, "]");
    nlohmann::ordered_json message = {{"role", m.role()}};
    message["content"] = m.has_content() ? nlohmann::ordered_json(m.content()) : nlohmann::ordered_json(nullptr);
    if (!m.name().empty()) message["name"] = m.name();
    if (!m.tool_call_id().empty()) message["tool_call_id"] = m.tool_call_id();
    if (!m.tool_calls_json().empty()) {
      ARACH_ASSIGN_OR_RETURN(message["tool_calls"], ParseJsonField(m.tool_calls_json(), field + ".tool_calls_json", false));
    }
    if (!m.reasoning_content().empty()) message["reasoning_content"] = m.reasoning_content();
    input.messages.push_back(std::move(message));
  }
  ARACH_RETURN_IF_ERROR(CheckConversation(input.messages, "tool_calls_json"));  // roles, content, tool calls
  if (!r.tools_json().empty()) {
    ARACH_ASSIGN_OR_RETURN(input.tools, ParseJsonField(r.tools_json(), "tools_json", false));
    if (input.tools.empty()) input.tools = nullptr;
  }
  ARACH_RETURN_IF_ERROR(SetTurnOpening(r.has_add_generation_prompt() ? std::optional<bool>(r.add_generation_prompt()) : std::nullopt,
                                       r.continue_final_message(), "continue_final_message", input));
  if (!r.chat_template_kwargs_json().empty()) {
    ARACH_ASSIGN_OR_RETURN(input.extra, ParseJsonField(r.chat_template_kwargs_json(), "chat_template_kwargs_json", true));
    ARACH_RETURN_IF_ERROR(CheckExtraTemplateVariables(input.extra, "chat_template_kwargs_json"));
  }
  if (!r.documents_json().empty()) {
    ARACH_ASSIGN_OR_RETURN(input.documents, ParseJsonField(r.documents_json(), "documents_json", false));
    ARACH_RETURN_IF_ERROR(CheckDocuments(input.documents, "documents_json"));
  }
  return input;
}

namespace {

template <typename Entry>
void SetText(const TokenText& text, Entry* entry) {
  entry->set_token_id(text.token);
  entry->set_logprob(text.logprob);
  entry->set_token(text.text);
  entry->set_token_bytes(text.bytes);
}

}  // namespace

arach::v1::GenerateResponse ToResponse(const StreamChunk& chunk, PieceDecoder* pieces) {
  arach::v1::GenerateResponse response;
  for (const SampledToken& t : chunk.tokens) {
    response.add_token_ids(t.token);
    if (pieces == nullptr) continue;
    arach::v1::TokenLogprob* lp = response.add_logprobs();
    absl::StatusOr<TokenTextWithTop> text = pieces->Next(t);
    if (!text.ok()) {  // a token the tokenizer cannot decode: its id and log-probs still count
      lp->set_token_id(t.token);
      lp->set_logprob(t.logprob);
      for (const TokenLogprob& top : t.top) {
        arach::v1::TopLogprob* entry = lp->add_top();
        entry->set_token_id(top.token);
        entry->set_logprob(top.logprob);
      }
      pieces->Advance(t.token);
      continue;
    }
    SetText(text->chosen, lp);
    for (const TokenText& top : text->top) SetText(top, lp->add_top());
  }
  response.set_text(chunk.text);
  return response;
}

absl::StatusOr<std::string> ChosenRequestId(const std::string& request_id) {
  if (request_id.empty()) return NewRequestId();
  if (!IsUsableRequestId(request_id)) {
    return InvalidField("request_id", absl::StrCat("must be 1 to ", kMaxRequestIdBytes,
                                                   " printable ASCII characters without spaces (or empty: the server picks one)"));
  }
  return request_id;
}

RequestedVariant ToRequestedVariant(const arach::v1::VariantSpec& spec, const std::string& experiment_key) {
  RequestedVariant requested;
  if (spec.has_arach()) requested.arach = spec.arach();
  if (spec.has_skip()) requested.skip = spec.skip();
  if (spec.has_arach_offset()) requested.arach_offset = spec.arach_offset();
  requested.experiment_key = experiment_key;
  requested.lora = spec.lora();
  return requested;
}

void FillServedVariant(const ResolvedVariant& resolved, arach::v1::ServedVariant* out) {
  out->set_name(resolved.variant.Name());
  out->set_arach(resolved.variant.arach);
  out->set_arach_offset(resolved.variant.arach ? resolved.variant.arach_offset : 0.0f);
  out->set_skip(resolved.variant.skip);
  out->set_experiment_arm(resolved.arm);
  out->set_lora(resolved.lora);
}

void FillFinish(const FinishInfo& info, const ResolvedVariant& variant, const std::string& request_id, arach::v1::Finish* out) {
  out->set_reason(info.reason == FinishReason::kLength ? arach::v1::FINISH_REASON_LENGTH : arach::v1::FINISH_REASON_STOP);
  out->set_stop_string(info.stop_string);
  if (info.stop_token_id) out->set_stop_token_id(*info.stop_token_id);
  arach::v1::Usage* usage = out->mutable_usage();
  usage->set_prompt_tokens(info.usage.prompt_tokens);
  usage->set_completion_tokens(info.usage.completion_tokens);
  usage->set_cached_prompt_tokens(info.usage.cached_prompt_tokens);
  usage->set_preemptions(info.usage.preemptions);
  usage->set_draft_tokens(info.usage.draft_tokens);
  usage->set_accepted_draft_tokens(info.usage.accepted_draft_tokens);
  arach::v1::Timings* timings = out->mutable_timings();
  timings->set_queue_seconds(info.timings.queue_seconds);
  timings->set_time_to_first_token_seconds(info.timings.time_to_first_token_seconds);
  timings->set_time_per_output_token_seconds(info.timings.time_per_output_token_seconds);
  timings->set_total_seconds(info.timings.total_seconds);
  timings->set_prefill_seconds(info.timings.prefill_seconds);
  timings->set_decode_seconds(info.timings.decode_seconds);
  out->set_seed(info.seed);
  FillServedVariant(variant, out->mutable_variant());
  out->set_request_id(request_id);
}

void FillAttentionDiagnostics(const AttentionDiagnostics& attention, arach::v1::AttentionDiagnostics* out) {
  const auto heads_of = [&](const std::vector<float>& table, int layer, google::protobuf::RepeatedField<float>* field) {
    if (table.empty()) return;
    const auto first = table.begin() + static_cast<ptrdiff_t>(layer) * attention.num_heads;
    field->Add(first, first + attention.num_heads);
  };
  for (int l = 0; l < attention.num_layers; ++l) {
    arach::v1::LayerAttention* layer = out->add_layers();
    heads_of(attention.sink_mass, l, layer->mutable_sink_mass());
    heads_of(attention.hub_mass, l, layer->mutable_hub_mass());
    heads_of(attention.hub_rows_sink_mass, l, layer->mutable_hub_rows_sink_mass());
    heads_of(attention.hub_rows_hub_mass, l, layer->mutable_hub_rows_hub_mass());
  }
  out->set_mean_sink_mass(attention.MeanSinkMass());
}

}  // namespace arach::server
