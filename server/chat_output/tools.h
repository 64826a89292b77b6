// The tools of a chat request and the caller's tool_choice, read once for both APIs, and the constraint that
// makes the model's calls well-formed: for `required` and a named function the turn must be calls (in the
// model's syntax, each call's arguments matching its function's parameter schema); for `auto` the text is
// free until the model opens a call, and the call is then held to the same form. Built as an xgrammar
// structural tag (engine/constraint).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/constraint/output_constraint.h"
#include "engine/engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"
#include "server/chat_output/chat_output_format.h"
#include "server/chat_output/chat_output_parser.h"

namespace arach::server {

struct ToolSpec {
  std::string name;
  nlohmann::json parameters;  // a JSON Schema (an object schema; {"type": "object"} when none was given)
};

struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kNamed };
  Mode mode = Mode::kAuto;
  std::string name;  // kNamed: the function
};

// How an API writes a function tool. Chat completions (and gRPC's tools_json) nest its fields under "function":
// {"type": "function", "function": {"name", "description", "parameters", "strict"}}, tool_choice
// {"type": "function", "function": {"name"}}. The Responses API writes them flat: {"type": "function", "name",
// "description", "parameters", "strict"}, tool_choice {"type": "function", "name"}.
enum class ToolShape { kNested, kFlat };

// OpenAI's `tools` in `shape`. Errors are INVALID_ARGUMENT naming `field` as the caller wrote it
// ("tools[1].function.name" nested, "tools[1].name" flat).
absl::StatusOr<std::vector<ToolSpec>> ParseTools(const nlohmann::json& tools, const std::string& field,
                                                 ToolShape shape = ToolShape::kNested);

// OpenAI's `tool_choice`: "auto", "none", "required" or a function of `tools` named in `shape`; null means auto
// where there are tools, else none. Errors name `field` ("tool_choice.function.name" nested, "tool_choice.name"
// flat).
absl::StatusOr<ToolChoice> ParseToolChoice(const nlohmann::json& choice, const std::vector<ToolSpec>& tools, const std::string& field,
                                           ToolShape shape = ToolShape::kNested);

// The tools a turn's prompt shows the model (`tools` as the request gave them, for the chat template): all of them,
// also for tool_choice none (as OpenAI and vLLM do: the model still knows them, and a conversation keeps one prompt
// prefix whatever each turn's choice), unless the server leaves them out for none (`exclude_for_none`:
// --exclude_tools_when_tool_choice_none).
nlohmann::ordered_json ToolsForPrompt(nlohmann::ordered_json tools, const ToolChoice& choice, bool exclude_for_none);

// What comes before a turn's calls or content (reasoning models).
enum class ReasoningFirst {
  kNone,      // nothing: not a reasoning model, or the prompt closed the reasoning (or went on to the content)
  kOptional,  // a <think>...</think> block may open the turn
  kRequired,  // the turn starts inside <think> (a template that opens it, a prefill): its text runs to </think> first
};

// The constraint for a chat turn that may (auto) or must (required, named) call `tools` in `format`'s syntax;
// `parallel`: more than one call may come. `reasoning`: what comes first. `content`: with auto, the format (a structural-tag element) the turn's content must match where it
// makes no call (response_format / structured_outputs); the turn is then either such content or calls; nullopt:
// free text, calls anywhere after it. Empty (kind none) for tool_choice none or a format without tool calls.
OutputConstraint ToolCallConstraint(const ChatOutputFormat& format, const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                    bool parallel, ReasoningFirst reasoning, const std::optional<nlohmann::json>& content);

// How one chat turn is generated and read, from the request's tools and the rendered prompt.
struct ChatTurnPlan {
  OutputConstraint constraint;          // the tool-call constraint (kind none where calls are not constrained)
  bool parse_tools = false;             // tool calls are read out of the turn
  TurnStart turn_start = TurnStart::kOpen;  // where the model's text begins: inside <think> (a prompt or prefill that
                                           // opened it), inside a prefill's content, or at the turn's start
  bool keep_special_tokens = false;     // a marker the parser reads (a call's, the reasoning's) is a special token: the
                                        // text must keep it
  bool joins_content = false;           // the constraint holds the content's format beside the calls (auto)
  std::string banned_call_marker;       // tool_choice none with tools: the text that opens a call where it is one token
                                        // of the vocabulary (<tool_call>, <|python_tag|>, [TOOL_CALLS]), to add to the
                                        // request's bad_words so that no call opens; empty: nothing to ban
};

// The plan for a chat turn offering `tools` with `choice` (none: no call is read, and the call's opening marker is
// banned where it is one token), after `prompt` (the rendered conversation), whose last
// `continued` bytes are the text of a final message the turn continues (continue_final_message; else empty: a
// prefill that opened <think> without closing it continues the reasoning, one with other text continues the
// content). Its content is held to `content` (response_format / structured_outputs; kind none: free) where it
// calls no tool: with auto, the plan's constraint lets the turn be
// either such content or calls (as OpenAI's structured outputs with function calling); required or named need
// calls, which the content's format does not concern. INVALID_ARGUMENT naming `tools_field` when the model has no
// tool-call syntax we can read, or naming `tool_choice_field` for content that cannot join calls (a structural
// tag of the client's own).
absl::StatusOr<ChatTurnPlan> PlanChatTurn(const ChatOutputFormat& format, const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                          bool parallel, absl::string_view prompt, absl::string_view continued,
                                          const OutputConstraint& content,
                                          const Tokenizer& tokenizer, const std::string& tools_field,
                                          const std::string& tool_choice_field);

// Where `plan` joins the turn's content format with its calls (tool_choice auto beside a response format), the
// format compiled alone (Engine::CheckConstraint), so that an error in it names `content_field` (the response
// format's parameter) rather than the tools; OK otherwise.
absl::Status CheckJoinedContent(const ChatTurnPlan& plan, const Engine& engine, const OutputConstraint& content,
                                const std::string& content_field);

// A tool call's id, in the form the model's chat template takes back: 9 random letters and digits for Mistral's
// syntaxes (Mistral's templates refuse any other id in the conversation), else "call_" and 24 random hexadecimal
// digits.
std::string NewToolCallId(ToolCallSyntax syntax);

}  // namespace arach::server
