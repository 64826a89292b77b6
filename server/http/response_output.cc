#include "server/http/response_output.h"

#include "absl/strings/str_cat.h"
#include "server/chat_output/tools.h"

namespace arach::server::http {

using json = nlohmann::json;

namespace {

json OutputText(const std::string& text, json logprobs = json::array()) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", std::move(logprobs)}};
}

json ReasoningText(const std::string& text) { return {{"type", "reasoning_text"}, {"text", text}}; }

}  // namespace

std::string ResponseOutput::NextId(const char* prefix) const { return absl::StrCat(prefix, id_stem_, "_", items_.size()); }

json ResponseOutput::At(const char* type) const {
  return {{"type", type}, {"item_id", open_id_}, {"output_index", items_.size()}, {"content_index", 0}};
}

void ResponseOutput::Open(Kind kind, std::vector<json>& events) {
  open_ = kind;
  open_text_.clear();
  open_logprobs_ = json::array();
  json item;
  json part;
  if (kind == Kind::kReasoning) {
    open_id_ = NextId("rs_");
    item = {{"id", open_id_}, {"type", "reasoning"}, {"summary", json::array()}, {"content", json::array()}, {"status", "in_progress"}};
    part = ReasoningText("");
  } else {
    open_id_ = NextId("msg_");
    item = {{"id", open_id_}, {"type", "message"}, {"status", "in_progress"}, {"role", "assistant"}, {"content", json::array()}};
    part = OutputText("");
  }
  events.push_back({{"type", "response.output_item.added"}, {"output_index", items_.size()}, {"item", std::move(item)}});
  json added = At("response.content_part.added");
  added["part"] = std::move(part);
  events.push_back(std::move(added));
}

void ResponseOutput::Close(bool incomplete, std::vector<json>& events) {
  if (open_ == Kind::kNone) return;
  if (open_ == Kind::kCall) {
    const size_t index = items_.size();
    events.push_back({{"type", "response.function_call_arguments.done"}, {"item_id", open_id_}, {"output_index", index},
                      {"name", open_call_name_}, {"arguments", open_text_}});
    json item = {{"id", open_id_}, {"type", "function_call"}, {"status", incomplete ? "incomplete" : "completed"},
                 {"call_id", open_call_id_}, {"name", open_call_name_}, {"arguments", open_text_}};
    events.push_back({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
    items_.push_back(std::move(item));
    open_ = Kind::kNone;
    return;
  }
  const bool reasoning = open_ == Kind::kReasoning;
  json done = At(reasoning ? "response.reasoning_text.done" : "response.output_text.done");
  done["text"] = open_text_;
  if (!reasoning) done["logprobs"] = open_logprobs_;
  events.push_back(std::move(done));
  const json part = reasoning ? ReasoningText(open_text_) : OutputText(open_text_, open_logprobs_);
  json part_done = At("response.content_part.done");
  part_done["part"] = part;
  events.push_back(std::move(part_done));
  json item = reasoning ? json{{"id", open_id_}, {"type", "reasoning"}, {"summary", json::array()}, {"content", json::array({part})},
                               {"status", "completed"}}
                        : json{{"id", open_id_}, {"type", "message"}, {"status", incomplete ? "incomplete" : "completed"},
                               {"role", "assistant"}, {"content", json::array({part})}};
  events.push_back({{"type", "response.output_item.done"}, {"output_index", items_.size()}, {"item", item}});
  items_.push_back(std::move(item));
  open_ = Kind::kNone;
}

void ResponseOutput::Append(Kind kind, const std::string& text, json logprobs, std::vector<json>& events) {
  if (text.empty()) return;
  if (open_ != kind) {
    Close(/*incomplete=*/false, events);
    Open(kind, events);
  }
  open_text_ += text;
  json delta = At(kind == Kind::kReasoning ? "response.reasoning_text.delta" : "response.output_text.delta");
  delta["delta"] = text;
  if (kind == Kind::kMessage) {
    for (const json& entry : logprobs) open_logprobs_.push_back(entry);
    delta["logprobs"] = std::move(logprobs);
  }
  events.push_back(std::move(delta));
}

void ResponseOutput::AddCallPiece(const ToolCallPiece& piece, std::vector<json>& events) {
  if (!piece.name.empty()) {  // a call's first piece opens its item
    Close(/*incomplete=*/false, events);
    open_ = Kind::kCall;
    open_id_ = NextId("fc_");
    open_call_id_ = NewToolCallId(syntax_);
    open_call_name_ = piece.name;
    open_text_.clear();
    json item = {{"id", open_id_}, {"type", "function_call"}, {"status", "in_progress"}, {"call_id", open_call_id_},
                 {"name", piece.name}, {"arguments", ""}};
    events.push_back({{"type", "response.output_item.added"}, {"output_index", items_.size()}, {"item", std::move(item)}});
  }
  if (open_ != Kind::kCall) return;  // (a piece always follows its call's first)
  if (!piece.arguments.empty()) {
    open_text_ += piece.arguments;
    events.push_back({{"type", "response.function_call_arguments.delta"}, {"item_id", open_id_}, {"output_index", items_.size()},
                      {"delta", piece.arguments}});
  }
  if (piece.ends) Close(/*incomplete=*/false, events);
}

std::vector<json> ResponseOutput::Add(const ChatOutputDelta& delta, json content_logprobs) {
  std::vector<json> events;
  reasoning_ += delta.reasoning;
  Append(Kind::kReasoning, delta.reasoning, json::array(), events);
  Append(Kind::kMessage, delta.content, std::move(content_logprobs), events);
  for (const ToolCallPiece& piece : delta.tool_calls) AddCallPiece(piece, events);
  return events;
}

std::vector<json> ResponseOutput::Finish(bool incomplete) {
  std::vector<json> events;
  if (items_.empty() && open_ == Kind::kNone) Open(Kind::kMessage, events);  // a turn that said nothing: an empty message
  Close(incomplete, events);
  return events;
}

}  // namespace arach::server::http
