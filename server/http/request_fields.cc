#include "server/http/request_fields.h"

#include <algorithm>
#include <span>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "server/json_body.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

// Parameters both routes implement: OpenAI's, vLLM's sampling extensions, structured output, ours.
constexpr std::string_view kShared[] = {
    "model", "n", "stream", "stream_options", "max_tokens", "temperature", "top_p", "top_k", "min_p",
    "repetition_penalty", "presence_penalty", "frequency_penalty", "seed", "min_tokens", "ignore_eos",
    "skip_special_tokens", "stop", "include_stop_str_in_output", "stop_token_ids", "logit_bias", "logprobs", "prompt_logprobs", "return_tokens_as_token_ids", "return_token_ids", "truncate_prompt_tokens", "priority", "response_format",
    "structured_outputs", "cache_salt", "allowed_token_ids", "bad_words", "prediction",
    // arach-serve: the variant, its diagnostics and the experiment assignment
    "arach", "arach_offset", "skip", "diagnostics", "experiment_key",
    // accepted, and change nothing in the output (`user`, else `safety_identifier`, is the experiment key when none
    // is given)
    "user", "store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier"};
constexpr std::string_view kCompletionsOnly[] = {"prompt", "echo", "suffix"};
constexpr std::string_view kChatOnly[] = {"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice",
                                          "parallel_tool_calls", "add_generation_prompt", "continue_final_message",
                                          "chat_template_kwargs", "documents", "return_prompt", "echo", "reasoning_effort",
                                          "chat_template"};

// The Responses API (/v1/responses): OpenAI's parameters, the sampling extensions that make sense without
// chat's n/stop/logprobs, and ours.
constexpr std::string_view kResponses[] = {
    "model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream", "stream_options", "tools",
    "tool_choice", "parallel_tool_calls", "text", "truncation", "include", "top_logprobs", "previous_response_id", "background",
    // vLLM's sampling extensions and chat-template arguments
    "top_k", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty", "seed", "min_tokens", "priority",
    "chat_template_kwargs", "cache_salt", "reasoning",
    // arach-serve: the variant, its diagnostics and the experiment assignment
    "arach", "arach_offset", "skip", "diagnostics", "experiment_key",
    // accepted, and change nothing in the output (`store` keeps the answer where the server stores answers,
    // --responses_store_bytes; the answer says whether it did; `max_tool_calls` bounds calls to OpenAI's built-in
    // tools, and the only tools here are functions)
    "user", "store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier", "max_tool_calls"};

// The embeddings API (/v1/embeddings): OpenAI's parameters, vLLM's extensions and ours.
constexpr std::string_view kEmbeddings[] = {
    "model", "input", "encoding_format", "dimensions", "user",
    // vLLM's: each input keeps its last k tokens; normalize (default true) to unit length; priority; the prefix-cache
    // namespace
    "truncate_prompt_tokens", "normalize", "priority", "cache_salt",
    // arach-serve: the variant and the experiment assignment
    "arach", "arach_offset", "skip", "experiment_key"};

// The rerank API (/rerank, /v1/rerank, /v2/rerank): vLLM's (Jina's and Cohere's shape) and ours.
constexpr std::string_view kRerank[] = {
    "model", "query", "documents", "top_n", "return_documents", "user",
    // vLLM's: each text keeps its last k tokens; priority; the prefix-cache namespace
    "truncate_prompt_tokens", "priority", "cache_salt",
    // arach-serve: the variant and the experiment assignment
    "arach", "arach_offset", "skip", "experiment_key"};

// The score API (/score, /v1/score): vLLM's and ours.
constexpr std::string_view kScore[] = {
    "model", "text_1", "text_2", "user", "truncate_prompt_tokens", "priority", "cache_salt",
    // arach-serve: the variant and the experiment assignment
    "arach", "arach_offset", "skip", "experiment_key"};

// The classify API (/classify, /v1/classify): vLLM's and ours.
constexpr std::string_view kClassify[] = {
    "model", "input", "user", "truncate_prompt_tokens", "priority", "cache_salt",
    // arach-serve: the variant and the experiment assignment
    "arach", "arach_offset", "skip", "experiment_key"};

// Known Responses API parameters we do not implement, with what to do instead.
constexpr std::pair<std::string_view, std::string_view> kResponsesNotImplemented[] = {
    {"conversation", "is not supported: conversations are not stored here; send the whole conversation in input"},
    {"prompt", "stored prompt templates are not supported"},
};

// Known parameters we do not implement, with what to do instead.
constexpr std::pair<std::string_view, std::string_view> kNotImplemented[] = {
    {"audio", "audio output is not supported (text only)"},
    {"modalities", "only text output is supported; leave modalities out"},
    {"verbosity", "is not supported"},
    {"web_search_options", "web search is not supported"},
    {"functions", "is deprecated and not supported: use tools"},
    {"function_call", "is deprecated and not supported: use tool_choice"},
    {"guided_json", "is not supported: use structured_outputs.json (vLLM's current name)"},
    {"guided_regex", "is not supported: use structured_outputs.regex"},
    {"guided_choice", "is not supported: use structured_outputs.choice"},
    {"guided_grammar", "is not supported: use structured_outputs.grammar"},
    {"guided_json_object", "is not supported: use response_format {\"type\": \"json_object\"}"},
    {"use_beam_search", "beam search is not supported"},
    {"length_penalty", "is not supported (no beam search)"},
    {"best_of", "is not supported beyond 1 (ask for n choices instead)"},
};

bool Contains(std::span<const std::string_view> list, std::string_view key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

// Values that ask for nothing: null, and the defaults of parameters we do not implement (clients send them).
bool AsksForNothing(std::string_view key, const json& value) {
  if (value.is_null()) return true;
  if (key == "best_of") return value.is_number_integer() && value.get<int64_t>() == 1;
  if (key == "suffix") return value.is_string() && value.get<std::string>().empty();  // (OpenAI's default is null)
  if (key == "modalities") return value == json::array({"text"});
  if (key == "include") return value.is_array() && value.empty();
  return false;
}

absl::Status CheckResponsesParameters(const json& body) {
  for (const auto& item : body.items()) {
    const std::string& key = item.key();
    if (AsksForNothing(key, item.value())) continue;
    if (const auto* it = std::find_if(std::begin(kResponsesNotImplemented), std::end(kResponsesNotImplemented),
                                      [&](const auto& e) { return e.first == key; });
        it != std::end(kResponsesNotImplemented)) {
      return KeyError("", key, std::string(it->second));
    }
    if (Contains(kResponses, key)) continue;
    return KeyError("", key, Contains(kShared, key) || Contains(kChatOnly, key) ? "is not a parameter of /v1/responses"
                                                                               : "is not a known parameter");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRequestParameters(const json& body, OpenAiRoute route) {
  if (route == OpenAiRoute::kResponses) return CheckResponsesParameters(body);
  if (route == OpenAiRoute::kEmbeddings || route == OpenAiRoute::kRerank || route == OpenAiRoute::kScore ||
      route == OpenAiRoute::kClassify) {
    // The embedding routes: their own parameters; another route's is named as such.
    struct Own {
      OpenAiRoute route;
      std::span<const std::string_view> parameters;
      const char* path;
    };
    const Own routes[] = {{OpenAiRoute::kEmbeddings, kEmbeddings, "/v1/embeddings"}, {OpenAiRoute::kRerank, kRerank, "/v1/rerank"},
                          {OpenAiRoute::kScore, kScore, "/v1/score"}, {OpenAiRoute::kClassify, kClassify, "/v1/classify"}};
    const Own& own = *std::find_if(std::begin(routes), std::end(routes), [&](const Own& r) { return r.route == route; });
    for (const auto& item : body.items()) {
      if (item.value().is_null() || Contains(own.parameters, item.key())) continue;
      const bool elsewhere = Contains(kShared, item.key()) || Contains(kCompletionsOnly, item.key()) || Contains(kChatOnly, item.key()) ||
                             std::any_of(std::begin(routes), std::end(routes), [&](const Own& r) { return Contains(r.parameters, item.key()); });
      return KeyError("", item.key(), elsewhere ? absl::StrCat("is not a parameter of ", own.path) : "is not a known parameter");
    }
    return absl::OkStatus();
  }
  const bool completions = route == OpenAiRoute::kCompletions;
  const std::span<const std::string_view> own = completions ? std::span<const std::string_view>(kCompletionsOnly) : kChatOnly;
  const std::span<const std::string_view> other = completions ? std::span<const std::string_view>(kChatOnly) : kCompletionsOnly;
  for (const auto& item : body.items()) {
    const std::string& key = item.key();
    if (AsksForNothing(key, item.value())) continue;
    if (const auto* it = std::find_if(std::begin(kNotImplemented), std::end(kNotImplemented), [&](const auto& e) { return e.first == key; });
        it != std::end(kNotImplemented)) {
      return KeyError("", key, std::string(it->second));
    }
    if (Contains(kShared, key) || Contains(own, key)) continue;
    return KeyError("", key, Contains(other, key)
                                 ? absl::StrCat("is not a parameter of ", completions ? "/v1/completions" : "/v1/chat/completions")
                                 : "is not a known parameter");
  }
  return absl::OkStatus();
}

}  // namespace arach::server::http
