// The structured-output fields of an OpenAI request, completions and chat alike: OpenAI's `response_format`
// (`text`, `json_object`, `json_schema` with `name`, `schema` and `strict`) and vLLM's `structured_outputs`
// (exactly one of `json` (a schema, as an object or JSON text), `regex`, `choice` (a list of strings),
// `grammar` (EBNF), `json_object: true`). One request asks for one constraint at most. Errors are
// INVALID_ARGUMENT naming the parameter ("response_format.json_schema.schema: ..."); whether xgrammar can
// compile what is asked is the engine's to say, under `field`.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/constraint/output_constraint.h"
#include "nlohmann/json.hpp"

namespace arach::server::http {

struct RequestedConstraint {
  OutputConstraint constraint;  // kind none when the request asks for none
  std::string field;            // the parameter that asked for it, for the engine's compile errors
};

absl::StatusOr<RequestedConstraint> ParseStructuredOutput(const nlohmann::json& body);

// The Responses API's `text.format` (`format`, named `field`): {"type": "text"}, {"type": "json_object"} or the
// flat {"type": "json_schema", "name", "schema", "strict", "description"}; null asks for nothing.
absl::StatusOr<RequestedConstraint> ParseTextFormat(const nlohmann::json& format, const std::string& field);

}  // namespace arach::server::http
