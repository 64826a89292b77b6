// The parameters the OpenAI routes know, in one table: a request naming a parameter we do not know is refused
// (HTTP 400 naming it, as OpenAI refuses one), a known parameter we do not implement is refused saying so, and
// the few that change nothing in what we return (user, store, metadata, service_tier, prompt_cache_key,
// safety_identifier) are accepted. /v1/responses has a table of its own (the Responses API names its fields
// differently and has no n, stop or logprobs). Nothing a client sends is silently ignored. README "Request parameters"
// lists the same.
#pragma once

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace arach::server::http {

enum class OpenAiRoute { kCompletions, kChatCompletions, kResponses, kEmbeddings, kRerank, kScore, kClassify };

// OK, or INVALID_ARGUMENT "<param>: ..." for the first parameter of `body` (an object) that is unknown or
// not implemented on `route`.
absl::Status CheckRequestParameters(const nlohmann::json& body, OpenAiRoute route);

}  // namespace arach::server::http
