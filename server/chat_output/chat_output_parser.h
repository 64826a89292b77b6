// Splits a chat turn's text, as it streams, into what OpenAI's chat API returns separately: the reasoning
// (<think>...</think>, reasoning_content), the content, and the tool calls (name and arguments as JSON text),
// in the model's syntax (chat_output_format.h). Streamed and whole answers go through the same Feed calls, so
// streamed deltas always assemble to the whole answer.
//
// Text is held back only while it may still become a marker ("<tool_c" at the end of a delta) or belongs to
// a call not yet closed; a call whose text does not parse (a model cut off by max_tokens, an unconstrained
// model writing bad JSON) comes back as content, so nothing the model wrote is lost. Whitespace between and
// after calls is dropped.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/chat_output/chat_output_format.h"

namespace arach::server {

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // the arguments object as compact JSON text
};

// Bytes [begin, end) of a turn's text: all the text fed to a parser, joined.
struct TextSpan {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const TextSpan&) const = default;
};

struct ChatOutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> tool_calls;
  // Where in the turn's text `content` was taken from, in order: the spans' text joined is `content` (what the
  // turn's tokens said in its content, for the log-probs of the content's tokens).
  std::vector<TextSpan> content_from;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// Where the text the parser reads starts within the assistant's turn.
enum class TurnStart {
  kOpen,       // at the turn's start: a reasoning model may open it with a <think> block
  kReasoning,  // inside a <think> block the prompt opened (a template that starts the turn thinking, a prefill)
  kContent,    // inside the content: a prefill (continue_final_message) wrote content or closed its reasoning
};

class ChatOutputParser {
 public:
  // `parse_tools`: the request offered tools (else tool syntax is plain content). `start`: where the turn is
  // when the model's text begins (ChatTurnPlan::turn_start).
  ChatOutputParser(const ChatOutputFormat& format, bool parse_tools, TurnStart start);

  // The parts `text` completes.
  ChatOutputDelta Feed(absl::string_view text);
  // The rest, at the end of the turn.
  ChatOutputDelta Finish();
  // Tool calls returned so far.
  int num_tool_calls() const { return num_tool_calls_; }

 private:
  enum class Phase { kStart, kReasoning, kContent, kHermesCall, kToolTail };
  void Step(ChatOutputDelta& out, bool final);
  // Adds `text` to the content (leading whitespace dropped after a call or the reasoning).
  void AppendContent(ChatOutputDelta& out, absl::string_view text);
  // Whether the turn's text so far, `start` (leading whitespace stripped), opens calls in a syntax whose calls are the
  // whole turn (TurnOpensWithCalls): yes, no, or not known until more text comes.
  enum class Opening { kCalls, kContent, kUndecided };
  Opening TurnOpening(absl::string_view start) const;
  // Whether the syntax's calls are the whole turn, opening it (llama3_json, pythonic).
  bool TurnOpensWithCalls() const {
    return format_.tools == ToolCallSyntax::kLlama3Json || format_.tools == ToolCallSyntax::kPythonic;
  }
  // Parses `text` as calls of the tail syntax (llama3_json, mistral, pythonic); false when it does not parse.
  bool ParseTail(absl::string_view text, std::vector<ParsedToolCall>& calls) const;
  void AddCalls(ChatOutputDelta& out, std::vector<ParsedToolCall> calls);

  ChatOutputFormat format_;
  bool parse_tools_;
  Phase phase_;
  // Drops the first `n` bytes of pending_ (returned, or read as markers and calls).
  void Consume(size_t n);

  std::string pending_;           // text received and not yet returned
  size_t consumed_ = 0;           // bytes of the turn's text before pending_
  bool content_started_ = false;  // some content was returned (llama3_json and pythonic calls must open the turn)
  bool drop_leading_space_ = false;  // after a call or the reasoning: whitespace before more content is dropped
  int num_tool_calls_ = 0;
};

}  // namespace arach::server
