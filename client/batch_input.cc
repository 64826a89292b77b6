#include "client/batch_input.h"

#include <algorithm>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

using json = nlohmann::json;

absl::StatusOr<BatchRequest> ParseLine(int line, absl::string_view text) {
  const json object = json::parse(std::string_view(text.data(), text.size()), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) return BatchLineError(line, "", "is not a JSON object");
  for (const auto& item : object.items()) {
    if (item.key() != "custom_id" && item.key() != "method" && item.key() != "url" && item.key() != "body") {
      return BatchLineError(line, item.key(), "is not a key of a batch request (custom_id, method, url, body)");
    }
  }
  BatchRequest request;
  request.line = line;
  const auto id = object.find("custom_id");
  if (id == object.end() || !id->is_string() || id->get_ref<const std::string&>().empty()) {
    return BatchLineError(line, "custom_id", "must be a non-empty string");
  }
  request.custom_id = id->get<std::string>();
  const auto method = object.find("method");
  if (method == object.end() || *method != "POST") return BatchLineError(line, "method", "must be \"POST\"");
  const auto url = object.find("url");
  const std::vector<std::string_view>& urls = BatchUrls();
  if (url == object.end() || !url->is_string() ||
      std::find(urls.begin(), urls.end(), url->get_ref<const std::string&>()) == urls.end()) {
    const std::string listed = absl::StrJoin(urls, ", ", [](std::string* out, std::string_view u) { out->append(u); });
    return BatchLineError(line, "url", absl::StrCat("must be one of ", listed));
  }
  request.url = url->get<std::string>();
  const auto body = object.find("body");
  if (body == object.end() || !body->is_object()) return BatchLineError(line, "body", "must be a JSON object");
  if (const auto stream = body->find("stream"); stream != body->end() && *stream != false && !stream->is_null()) {
    return BatchLineError(line, "body.stream", "a batch request is answered whole, not streamed");
  }
  request.body = body->dump();
  return request;
}

}  // namespace

absl::Status BatchLineError(int line, absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", field, field.empty() ? "" : ": ", problem));
}

const std::vector<std::string_view>& BatchUrls() {
  static const std::vector<std::string_view> urls = {"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings",
                                                     "/v1/rerank",          "/v1/score",       "/v1/classify"};
  return urls;
}

absl::StatusOr<std::vector<BatchRequest>> ParseBatchInput(std::string_view text) {
  std::vector<BatchRequest> requests;
  std::unordered_set<std::string> ids;
  int line = 0;
  for (absl::string_view row : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line;
    row = absl::StripTrailingAsciiWhitespace(row);  // a file written on Windows ends its lines with \r
    if (absl::StripLeadingAsciiWhitespace(row).empty()) continue;
    if (requests.size() == kMaxBatchRequests) {
      return BatchLineError(line, "", absl::StrCat("the file holds more than ", kMaxBatchRequests, " requests"));
    }
    absl::StatusOr<BatchRequest> request = ParseLine(line, row);
    if (!request.ok()) return request.status();
    if (!ids.insert(request->custom_id).second) {
      return BatchLineError(line, "custom_id", absl::StrCat("\"", request->custom_id, "\" is used by an earlier line"));
    }
    request->index = requests.size();
    requests.push_back(*std::move(request));
  }
  if (requests.empty()) return absl::InvalidArgumentError("the file holds no request");
  return requests;
}

}  // namespace arach::client
