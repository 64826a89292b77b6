// How a model writes its tool calls and its reasoning in a chat turn, chosen once when the model loads: from
// its chat template (the markers the template writes into the prompt), or named with --tool_call_parser and
// --reasoning_parser. Both APIs read chat output through it (chat_output_parser.h) and constrain tool calls
// with it (tool_call_constraint.h).
//
//   hermes       Qwen2.5, Qwen3, Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one
//                block per call
//   llama3_json  Llama 3.1 / 3.2: the turn is {"name": ..., "parameters": {...}} (after <|python_tag|> or not),
//                calls separated by "; "
//   mistral      Mistral's tokenizers before v11 (Mistral 7B v0.3, Mistral Nemo, Mixtral):
//                [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
//   mistral_v11  Mistral's tokenizers v11 and later (Mistral Small 3.1+, Magistral, Devstral, Ministral 3): each
//                call [TOOL_CALLS]name[ARGS]{...} ([TOOL_CALLS]name[CALL_ID]id[ARGS]{...} and, before [ARGS]
//                came, [TOOL_CALLS]name{...} are read too)
//   pythonic     Llama 3.2 with a pythonic template (vLLM's), and templates asking for the same: the turn is a
//                Python list of calls, [get_weather(city='Paris'), get_time()] (python_calls.h)
//
// Reasoning: a block before the answer goes to reasoning_content:
//   qwen3        <think>...</think> (Qwen3, DeepSeek R1 and the like)
//   mistral      [THINK]...[/THINK] (Magistral from 2507, whose tokenizer has them as special tokens)
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arach::server {

enum class ToolCallSyntax { kNone, kHermes, kLlama3Json, kMistral, kMistralV11, kPythonic };

// Mistral's syntaxes: calls open with [TOOL_CALLS] and take 9-character ids.
inline bool IsMistralSyntax(ToolCallSyntax syntax) {
  return syntax == ToolCallSyntax::kMistral || syntax == ToolCallSyntax::kMistralV11;
}

inline constexpr absl::string_view kThinkOpen = "<think>";
inline constexpr absl::string_view kThinkClose = "</think>";
inline constexpr absl::string_view kMistralThinkOpen = "[THINK]";
inline constexpr absl::string_view kMistralThinkClose = "[/THINK]";

struct ChatOutputFormat {
  ToolCallSyntax tools = ToolCallSyntax::kNone;
  bool reasoning = false;  // a block between think_open and think_close is the turn's reasoning
  absl::string_view think_open = kThinkOpen;    // <think>, or Mistral's [THINK]
  absl::string_view think_close = kThinkClose;  // </think>, or [/THINK]
  // Where the format came from, for the start-up log and errors ("chat template", "--tool_call_parser").
  std::string tools_origin;

  // "hermes", "llama3_json", "mistral", "mistral_v11", "pythonic", "none".
  const char* ToolsName() const;
  // "qwen3", "mistral", "none".
  const char* ReasoningName() const;
};

// The format a chat template's source implies: the tool-call markers it writes ([TOOL_CALLS] with [ARGS] is
// mistral_v11, [TOOL_CALLS] alone mistral) and the reasoning block's (<think> and </think>, or [THINK] and [/THINK]).
ChatOutputFormat ChatOutputFormatOfTemplate(absl::string_view template_source);

// The format for the served model: `tool_call_parser` and `reasoning_parser` are "auto" (the template's),
// "none", or a format's name ("hermes", "llama3_json", "mistral", "mistral_v11", "pythonic"; "qwen3" or "mistral"
// for reasoning). INVALID_ARGUMENT naming the flag for any other name.
absl::StatusOr<ChatOutputFormat> ResolveChatOutputFormat(absl::string_view template_source, absl::string_view tool_call_parser,
                                                         absl::string_view reasoning_parser);

// The markers of each syntax.
inline constexpr absl::string_view kHermesOpen = "<tool_call>";
inline constexpr absl::string_view kHermesClose = "</tool_call>";
inline constexpr absl::string_view kLlamaPythonTag = "<|python_tag|>";
inline constexpr absl::string_view kMistralToolCalls = "[TOOL_CALLS]";
inline constexpr absl::string_view kMistralArgs = "[ARGS]";
inline constexpr absl::string_view kMistralCallId = "[CALL_ID]";
// What a pythonic template tells the model ("Respond in the format [func_name1(params_name1=params_value1, ...").
inline constexpr absl::string_view kPythonicInstruction = "[func_name1(";

}  // namespace arach::server
