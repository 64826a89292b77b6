// The output of a Responses API answer (/v1/responses), built from a chat turn's parts as they come
// (chat_output_parser.h): reasoning becomes a `reasoning` item (reasoning_text), content a `message` item
// (output_text), each tool call a `function_call` item (its arguments streamed as the model writes them). An item
// stays open while its kind of part goes on and is done when another kind comes, its call ends, or the turn ends. The stream's events and the whole answer's items come from the
// same calls, so streamed events always assemble to the items of the whole answer.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "server/chat_output/chat_output_parser.h"

namespace arach::server::http {

class ResponseOutput {
 public:
  // Item ids are "rs_", "msg_" or "fc_", then `id_stem`, "_" and the item's output index; a call's call_id is in
  // the form `syntax`'s chat templates take back (NewToolCallId).
  ResponseOutput(std::string id_stem, ToolCallSyntax syntax) : id_stem_(std::move(id_stem)), syntax_(syntax) {}

  // The events `delta` makes (each {"type": ..., ...}, without a sequence number). `content_logprobs`: the log-prob
  // entries of the tokens of its content (ContentLogprobs), carried by its output_text delta and then the part.
  std::vector<nlohmann::json> Add(const ChatOutputDelta& delta, nlohmann::json content_logprobs = nlohmann::json::array());
  // The events that close the open item (a turn that said nothing gets an empty message). `incomplete`: the turn
  // was cut off (max_output_tokens), and the open message says so in its status.
  std::vector<nlohmann::json> Finish(bool incomplete);

  // The items done so far, in order (all of them after Finish).
  const nlohmann::json& items() const { return items_; }
  // All the reasoning text (for the count of reasoning tokens).
  const std::string& reasoning() const { return reasoning_; }

 private:
  enum class Kind { kNone, kReasoning, kMessage, kCall };
  void Open(Kind kind, std::vector<nlohmann::json>& events);
  void Close(bool incomplete, std::vector<nlohmann::json>& events);
  void Append(Kind kind, const std::string& text, nlohmann::json logprobs, std::vector<nlohmann::json>& events);
  // A call's first piece opens its function_call item, later pieces stream its arguments, the last one closes it.
  void AddCallPiece(const ToolCallPiece& piece, std::vector<nlohmann::json>& events);
  // The fields that place an event in item `open_` ("item_id", "output_index", "content_index").
  nlohmann::json At(const char* type) const;
  std::string NextId(const char* prefix) const;

  std::string id_stem_;
  ToolCallSyntax syntax_;
  nlohmann::json items_ = nlohmann::json::array();
  Kind open_ = Kind::kNone;  // the kind of the item open at index items_.size()
  std::string open_id_;
  std::string open_text_;  // the open message's or reasoning's text, or the open call's arguments
  std::string open_call_id_;    // the open call's
  std::string open_call_name_;
  nlohmann::json open_logprobs_ = nlohmann::json::array();  // the open message's
  std::string reasoning_;
};

}  // namespace arach::server::http
