// Splits a chat turn's text, as it streams, into what OpenAI's chat API returns separately: the reasoning
// (<think>...</think> or [THINK]...[/THINK], reasoning_content), the content, and the tool calls (name and
// arguments as JSON text), in the model's syntax (chat_output_format.h). Streamed and whole answers go through the same Feed calls, so
// streamed deltas always assemble to the whole answer.
//
// A JSON call written as {"name": "...", "arguments": {...}} ("parameters" in Llama 3's), and a Mistral v11 call
// ([TOOL_CALLS]name[ARGS]{...}), streams as the model writes it, as OpenAI's API streams calls: its name as soon
// as it is complete, then its arguments' text piece by piece (the model's own text, so every piece joined is
// what it wrote). A call of another shape (keys in another order, arguments as a string) comes whole once the turn
// ends, and each call of a pythonic list whole once its `)` is written.
// Text is held back only while it may still become a marker ("<tool_c" at the end of a delta) or a call's head,
// or belongs to a call that comes whole. Nothing the model wrote is lost: a call whose head or text does not
// parse (a model cut off by max_tokens, an unconstrained model writing bad JSON) comes back as content, and so
// does text after a streamed call's arguments that does not close it; a call cut off inside its arguments keeps
// the arguments written so far (OpenAI's answer for a call cut off by max_tokens). Whitespace between and after
// calls is dropped.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/chat_output/chat_output_format.h"

namespace arach::server {

// A whole tool call, as a syntax's reader returns it.
struct ParsedToolCall {
  std::string name;
  std::string arguments;  // the arguments object as JSON text
};

// A piece of a tool call as the model writes it: the call's first piece names it, each piece brings more of its
// arguments' JSON text, and a piece that `ends` it says no more of it follows (the call's pieces may all come in
// one, a call that comes whole). A call cut off inside its arguments (max_tokens) never ends.
struct ToolCallPiece {
  int index = 0;          // the call's place among the turn's calls (0, 1, ...)
  std::string name;       // the function, on the call's first piece only
  std::string arguments;  // more of its arguments' JSON text
  bool ends = false;
  bool operator==(const ToolCallPiece&) const = default;
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
  std::vector<ToolCallPiece> tool_calls;  // in order; consecutive pieces of one call are joined
  // Where in the turn's text `content` was taken from, in order: the spans' text joined is `content` (what the
  // turn's tokens said in its content, for the log-probs of the content's tokens).
  std::vector<TextSpan> content_from;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// Adds `piece` to `delta`'s calls, joined to the last piece when it continues the same call.
void AddToolCallPiece(ChatOutputDelta& delta, ToolCallPiece piece);
// Appends `more` (what a later Feed or Finish returned) to `delta`.
void AppendDelta(ChatOutputDelta& delta, ChatOutputDelta more);

// JSON text read a byte at a time: how deep in objects and arrays, and whether inside a string.
struct JsonNesting {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  void Read(char c);
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
  const ChatOutputFormat& format() const { return format_; }

 private:
  enum class Phase {
    kStart,
    kReasoning,
    kContent,
    kHermesCall,     // after <tool_call>: the call's head (it streams), or all its text (it comes whole)
    kCallHead,       // a Llama 3 or Mistral call's head, where the syntax's calls open or go on (v11: at [TOOL_CALLS])
    kCallArguments,  // inside a streamed call's arguments object
    kCallClose,      // after a streamed call's arguments: the call's `}`, then what closes or separates calls
    kPythonList,     // inside a pythonic list: each call comes whole once its `)` is written
    kToolTail,       // calls that come whole with the end of the turn (Llama 3 / Mistral calls that do not stream)
  };
  void Step(ChatOutputDelta& out, bool final);
  // Each phase's step: true to go on with the next phase, false to wait for more text (or, `final`, to stop).
  bool StepContent(ChatOutputDelta& out, bool final);
  bool StepHermesCall(ChatOutputDelta& out, bool final);
  bool StepCallHead(ChatOutputDelta& out, bool final);
  bool StepNamedCallHead(ChatOutputDelta& out, bool final);  // Mistral v11's: [TOOL_CALLS]name[ARGS]
  bool StepCallArguments(ChatOutputDelta& out, bool final);
  bool StepCallClose(ChatOutputDelta& out, bool final);
  bool StepPythonList(ChatOutputDelta& out, bool final);
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
  // Parses `text` as calls of the tail syntax (llama3_json, mistral); false when it does not parse.
  bool ParseTail(absl::string_view text, std::vector<ParsedToolCall>& calls) const;
  // Whole calls, each in one piece.
  void AddWholeCalls(ChatOutputDelta& out, std::vector<ParsedToolCall> calls);
  // A streamed call: its first piece (its name), then the piece that ends it (none for a call that came whole).
  void OpenCall(ChatOutputDelta& out, std::string name);
  void EndCall(ChatOutputDelta& out);
  // Drops the first `n` bytes of pending_ (returned, or read as markers and calls).
  void Consume(size_t n);

  ChatOutputFormat format_;
  bool parse_tools_;
  Phase phase_;

  std::string pending_;           // text received and not yet returned
  size_t consumed_ = 0;           // bytes of the turn's text before pending_
  bool content_started_ = false;  // some content was returned (llama3_json and pythonic calls must open the turn)
  bool drop_leading_space_ = false;  // after a call or the reasoning: whitespace before more content is dropped
  int num_tool_calls_ = 0;
  JsonNesting arguments_;  // the streamed call's arguments object, read so far
  bool call_open_ = false;           // a streamed call has opened and not ended
  bool call_object_closed_ = false;  // kCallClose: the call's own `}` was read
  bool list_opens_ = false;          // kCallHead: the head follows the syntax's opening, not a separator
};

}  // namespace arach::server
