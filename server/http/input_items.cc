#include "server/http/input_items.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

constexpr int kDefaultLimit = 20;
constexpr int kMaxLimit = 100;

const char* IdPrefix(const std::string& type) {
  if (type == "function_call") return "fc_";
  if (type == "function_call_output") return "fco_";
  if (type == "reasoning") return "rs_";
  return "msg_";
}

// The position of the item with id `id` in `order`, or INVALID_ARGUMENT naming `param`.
absl::StatusOr<size_t> PositionOf(const std::vector<const json*>& order, const std::string& id, const char* param) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i]->value("id", "") == id) return i;
  }
  return InvalidField(param, absl::StrCat("'", ClipForError(id, 80), "' is not an input item of this response"));
}

}  // namespace

json ListedInputItems(const nlohmann::ordered_json& items, const std::string& stem) {
  json listed = json::array();
  for (size_t i = 0; i < items.size(); ++i) {
    json item = json::parse(items[i].dump());
    const bool message = !item.contains("type") || item["type"] == "message";
    if (message) {
      item["type"] = "message";
      if (item.contains("content") && item["content"].is_string()) {
        const bool assistant = item.value("role", "") == "assistant";
        item["content"] = json::array({{{"type", assistant ? "output_text" : "input_text"}, {"text", item["content"]}}});
      }
    }
    if (!item.contains("id") || !item["id"].is_string()) {
      item["id"] = absl::StrCat(IdPrefix(item["type"].get<std::string>()), stem, "_in", i);
    }
    listed.push_back(std::move(item));
  }
  return listed;
}

absl::StatusOr<json> InputItemsPage(const json& items, const httplib::Request& request) {
  for (const auto& [param, value] : request.params) {
    if (param != "limit" && param != "order" && param != "after" && param != "before") {
      return KeyError("", param, "is not a parameter of input_items (limit, order, after, before)", "query");
    }
  }
  int limit = kDefaultLimit;
  if (request.has_param("limit")) {
    const std::string text = request.get_param_value("limit");
    if (!absl::SimpleAtoi(text, &limit) || limit < 1 || limit > kMaxLimit) {
      return InvalidField("limit", absl::StrCat("'", ClipForError(text, 40), "' must be an integer in [1, ", kMaxLimit, "]"));
    }
  }
  const std::string order = request.has_param("order") ? request.get_param_value("order") : "desc";
  if (order != "asc" && order != "desc") return InvalidField("order", absl::StrCat("'", ClipForError(order, 40), "' must be asc or desc"));
  std::vector<const json*> ordered;
  for (const json& item : items) ordered.push_back(&item);
  if (order == "desc") std::reverse(ordered.begin(), ordered.end());
  size_t begin = 0, end = ordered.size();
  if (request.has_param("after")) {
    ARACH_ASSIGN_OR_RETURN(const size_t after, PositionOf(ordered, request.get_param_value("after"), "after"));
    begin = after + 1;
  }
  if (request.has_param("before")) {
    ARACH_ASSIGN_OR_RETURN(const size_t before, PositionOf(ordered, request.get_param_value("before"), "before"));
    end = std::min(end, before);
  }
  json data = json::array();
  for (size_t i = begin; i < end && data.size() < static_cast<size_t>(limit); ++i) data.push_back(*ordered[i]);
  const bool has_more = begin + data.size() < end;
  json page = {{"object", "list"}, {"data", data}, {"first_id", nullptr}, {"last_id", nullptr}, {"has_more", has_more}};
  if (!data.empty()) {
    page["first_id"] = data.front()["id"];
    page["last_id"] = data.back()["id"];
  }
  return page;
}

}  // namespace arach::server::http
