#include "client/batch_output.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

using ordered_json = nlohmann::ordered_json;  // the output keeps OpenAI's key order and the answer's own

}  // namespace

bool WorthAnotherTry(int status_code) { return status_code == 0 || status_code == 429 || status_code == 502 || status_code == 503; }

std::string BatchOutputLine(const BatchRequest& request, const BatchResult& result) {
  ordered_json line = {{"id", absl::StrCat("batch_req_", request.index)},
               {"custom_id", request.custom_id},
               {"response", nullptr},
               {"error", nullptr}};
  if (result.status_code == 0) {
    line["error"] = {{"code", "connection_error"},
                     {"message", absl::StrCat("no answer (", result.error, ") after ", result.attempts,
                                              result.attempts == 1 ? " try" : " tries")}};
  } else {
    ordered_json body = ordered_json::parse(result.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) body = result.body;  // not JSON (a proxy's page): kept as text
    line["response"] = {{"status_code", result.status_code}, {"request_id", result.request_id}, {"body", std::move(body)}};
  }
  return line.dump();
}

absl::StatusOr<FinishedLines> ReadFinishedLines(std::string_view text, const std::vector<BatchRequest>& requests) {
  std::set<std::string> known;
  for (const BatchRequest& r : requests) known.insert(r.custom_id);
  const std::vector<absl::string_view> rows = absl::StrSplit(absl::string_view(text.data(), text.size()), '\n');
  FinishedLines finished;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    const absl::string_view row = absl::StripAsciiWhitespace(rows[i]);
    if (row.empty()) continue;
    const ordered_json parsed = ordered_json::parse(std::string_view(row.data(), row.size()), nullptr, /*allow_exceptions=*/false);
    const bool last = i + 1 == rows.size();  // no newline after it: the run stopped while writing it
    if (parsed.is_discarded() && last) {
      ++finished.dropped;
      continue;
    }
    if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("custom_id") || !parsed["custom_id"].is_string() ||
        !parsed.contains("response") || !parsed.contains("error")) {
      return BatchLineError(line, "", "is not a batch output line (custom_id, response, error)");
    }
    const std::string id = parsed["custom_id"];
    if (!known.contains(id)) return BatchLineError(line, "", absl::StrCat("custom_id \"", id, "\" is not a request of the input file"));
    if (finished.custom_ids.contains(id)) {
      return BatchLineError(line, "", absl::StrCat("custom_id \"", id, "\" is answered by an earlier line"));
    }
    const ordered_json& response = parsed["response"];
    const bool answered = response.is_object() && response.contains("status_code") && response["status_code"].is_number_integer();
    if (!answered || WorthAnotherTry(response["status_code"].get<int>())) {
      ++finished.dropped;
      continue;
    }
    if (response["status_code"].get<int>() / 100 != 2) ++finished.not_2xx;
    finished.custom_ids.insert(id);
    finished.lines.emplace_back(row);
  }
  return finished;
}

}  // namespace arach::client
