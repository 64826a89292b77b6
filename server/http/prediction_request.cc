#include "server/http/prediction_request.h"

#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/http/content_parts.h"
#include "server/json_body.h"

namespace arach::server::http {

absl::StatusOr<std::optional<std::string>> ReadPrediction(const nlohmann::json& body) {
  const auto it = body.find("prediction");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return InvalidField("prediction", "must be an object: {\"type\": \"content\", \"content\": ...}");
  for (const auto& item : it->items()) {
    if (item.key() != "type" && item.key() != "content") return KeyError("prediction", item.key(), "is not a known parameter");
  }
  const auto type = it->find("type");
  if (type == it->end() || *type != "content") return InvalidField("prediction.type", "must be \"content\"");
  const auto content = it->find("content");
  if (content == it->end() || !(content->is_string() || content->is_array())) {
    return InvalidField("prediction.content", "is required: a string or a list of text parts");
  }
  ARACH_ASSIGN_OR_RETURN(nlohmann::ordered_json text, NormalizeContent(nlohmann::ordered_json(*content), "prediction.content"));
  if (text.get_ref<const std::string&>().empty()) return std::nullopt;
  return text.get<std::string>();
}

}  // namespace arach::server::http
