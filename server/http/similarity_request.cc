#include "server/http/similarity_request.h"

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/http/request_fields.h"
#include "server/json_body.h"

namespace arach::server::http {

using json = nlohmann::json;

absl::StatusOr<RerankRequest> ParseRerankRequest(const std::string& body_text) {
  ARACH_ASSIGN_OR_RETURN(const json body, ParseJson(body_text, "body"));
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  ARACH_RETURN_IF_ERROR(CheckRequestParameters(body, OpenAiRoute::kRerank));
  RerankRequest request;
  ARACH_ASSIGN_OR_RETURN(request.fields, ParseGenerationFields(body, /*max_tokens_keys=*/{}));
  const auto query = body.find("query");
  if (query == body.end() || query->is_null()) return InvalidField("query", "is required");
  if (!query->is_string()) return InvalidField("query", "must be a string");
  request.query = query->get<std::string>();
  const auto documents = body.find("documents");
  if (documents == body.end() || documents->is_null()) return InvalidField("documents", "is required");
  if (!documents->is_array()) return InvalidField("documents", "must be a list of strings or of {\"text\": string} objects");
  if (documents->empty()) return InvalidField("documents", "empty");
  for (size_t i = 0; i < documents->size(); ++i) {
    const json& document = (*documents)[i];
    const std::string field = absl::StrCat("documents[", i, "]");
    if (document.is_string()) {
      request.documents.push_back(document.get<std::string>());
      continue;
    }
    const auto text = document.is_object() ? document.find("text") : document.end();
    if (!document.is_object() || text == document.end() || !text->is_string()) {
      return InvalidField(field, "must be a string or a {\"text\": string} object");
    }
    for (const auto& item : document.items()) {
      if (item.key() != "text") return KeyError(field, item.key(), "is not a field of a document (only \"text\")");
    }
    request.documents.push_back(text->get<std::string>());
  }
  if (const auto top_n = body.find("top_n"); top_n != body.end() && !top_n->is_null()) {
    if (!top_n->is_number_integer() || (top_n->is_number_unsigned() ? top_n->get<uint64_t>() > (1u << 30) : top_n->get<int64_t>() < 0)) {
      return InvalidField("top_n", "must be an integer of at least 0 (0: every document)");
    }
    request.top_n = static_cast<int>(top_n->get<int64_t>());
  }
  std::optional<bool> return_documents;
  ARACH_ASSIGN_OR_RETURN(return_documents, OptionalBoolAt(body, "return_documents"));
  request.return_documents = return_documents.value_or(true);
  return request;
}

namespace {

// text_1 / text_2: a string, or a non-empty list of strings.
absl::StatusOr<std::vector<std::string>> ReadTexts(const json& body, const std::string& param) {
  const auto texts = body.find(param);
  if (texts == body.end() || texts->is_null()) return InvalidField(param, "is required");
  if (texts->is_string()) return std::vector<std::string>{texts->get<std::string>()};
  if (!texts->is_array()) return InvalidField(param, "must be a string or a list of strings");
  if (texts->empty()) return InvalidField(param, "empty");
  std::vector<std::string> out;
  for (size_t i = 0; i < texts->size(); ++i) {
    if (!(*texts)[i].is_string()) return InvalidField(absl::StrCat(param, "[", i, "]"), "must be a string");
    out.push_back((*texts)[i].get<std::string>());
  }
  return out;
}

}  // namespace

absl::StatusOr<SimilarityScoreRequest> ParseSimilarityScoreRequest(const std::string& body_text) {
  ARACH_ASSIGN_OR_RETURN(const json body, ParseJson(body_text, "body"));
  if (!body.is_object()) return InvalidField("body", "must be a JSON object");
  ARACH_RETURN_IF_ERROR(CheckRequestParameters(body, OpenAiRoute::kScore));
  SimilarityScoreRequest request;
  ARACH_ASSIGN_OR_RETURN(request.fields, ParseGenerationFields(body, /*max_tokens_keys=*/{}));
  ARACH_ASSIGN_OR_RETURN(request.text_1, ReadTexts(body, "text_1"));
  ARACH_ASSIGN_OR_RETURN(request.text_2, ReadTexts(body, "text_2"));
  if (request.text_1.size() > 1 && request.text_1.size() != request.text_2.size()) {
    return InvalidField("text_2", absl::StrCat("has ", request.text_2.size(), " texts for text_1's ", request.text_1.size(),
                                               " (one text_1 for all, or as many of each)"));
  }
  return request;
}

}  // namespace arach::server::http
