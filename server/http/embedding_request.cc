#include "server/http/embedding_request.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/http/request_fields.h"
#include "server/json_body.h"

namespace arach::server::http {

using json = nlohmann::json;

absl::StatusOr<EmbeddingRequest> ParseEmbeddingRequest(const std::string& body_text) {
  ARACH_ASSIGN_OR_RETURN(const json body, ParseJson(body_text, "body"));
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  ARACH_RETURN_IF_ERROR(CheckRequestParameters(body, OpenAiRoute::kEmbeddings));
  EmbeddingRequest request;
  ARACH_ASSIGN_OR_RETURN(request.fields, ParseGenerationFields(body, /*max_tokens_keys=*/{}));
  ARACH_ASSIGN_OR_RETURN(request.inputs, ReadPromptInputs(body, "input"));
  if (const auto format = body.find("encoding_format"); format != body.end() && !format->is_null()) {
    if (!format->is_string() || (*format != "float" && *format != "base64")) {
      return InvalidField("encoding_format", "must be \"float\" or \"base64\"");
    }
    request.base64 = *format == "base64";
  }
  if (const auto dimensions = body.find("dimensions"); dimensions != body.end() && !dimensions->is_null()) {
    // (nlohmann keeps every non-negative integer literal as unsigned.)
    const bool positive = dimensions->is_number_integer() &&
                          (dimensions->is_number_unsigned() ? dimensions->get<uint64_t>() >= 1 : dimensions->get<int64_t>() >= 1);
    if (!positive) {
      return InvalidField("dimensions", "must be an integer of at least 1");
    }
    // (An unsigned value past int64's range is past any model's width: the model check names it.)
    request.dimensions = dimensions->is_number_unsigned()
                             ? static_cast<int64_t>(std::min<uint64_t>(dimensions->get<uint64_t>(), std::numeric_limits<int64_t>::max()))
                             : dimensions->get<int64_t>();
  }
  std::optional<bool> normalize;
  ARACH_ASSIGN_OR_RETURN(normalize, OptionalBoolAt(body, "normalize"));
  request.normalize = normalize.value_or(true);
  return request;
}

absl::StatusOr<ClassifyRequest> ParseClassifyRequest(const std::string& body_text) {
  ARACH_ASSIGN_OR_RETURN(const json body, ParseJson(body_text, "body"));
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  ARACH_RETURN_IF_ERROR(CheckRequestParameters(body, OpenAiRoute::kClassify));
  ClassifyRequest request;
  ARACH_ASSIGN_OR_RETURN(request.fields, ParseGenerationFields(body, /*max_tokens_keys=*/{}));
  ARACH_ASSIGN_OR_RETURN(request.inputs, ReadPromptInputs(body, "input"));
  return request;
}

}  // namespace arach::server::http
