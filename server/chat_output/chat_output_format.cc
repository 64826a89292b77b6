#include "server/chat_output/chat_output_format.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"

namespace arach::server {

const char* ChatOutputFormat::ToolsName() const {
  switch (tools) {
    case ToolCallSyntax::kHermes: return "hermes";
    case ToolCallSyntax::kLlama3Json: return "llama3_json";
    case ToolCallSyntax::kMistral: return "mistral";
    case ToolCallSyntax::kMistralV11: return "mistral_v11";
    case ToolCallSyntax::kPythonic: return "pythonic";
    case ToolCallSyntax::kNone: break;
  }
  return "none";
}

const char* ChatOutputFormat::ReasoningName() const {
  if (!reasoning) return "none";
  return think_open == kMistralThinkOpen ? "mistral" : "qwen3";
}

namespace {

// Reasoning in `open` ... `close` blocks.
void SetReasoning(ChatOutputFormat& format, absl::string_view open, absl::string_view close) {
  format.reasoning = true;
  format.think_open = open;
  format.think_close = close;
}

}  // namespace

ChatOutputFormat ChatOutputFormatOfTemplate(absl::string_view source) {
  ChatOutputFormat format;
  format.tools_origin = "chat template";
  if (absl::StrContains(source, kHermesOpen)) {
    format.tools = ToolCallSyntax::kHermes;
  } else if (absl::StrContains(source, kMistralToolCalls)) {
    format.tools = absl::StrContains(source, kMistralArgs) ? ToolCallSyntax::kMistralV11 : ToolCallSyntax::kMistral;
  } else if (absl::StrContains(source, kPythonicInstruction)) {
    format.tools = ToolCallSyntax::kPythonic;
  } else if (absl::StrContains(source, kLlamaPythonTag) ||
             (absl::StrContains(source, "ipython") && absl::StrContains(source, "\"parameters\""))) {
    format.tools = ToolCallSyntax::kLlama3Json;
  }
  if (absl::StrContains(source, kThinkOpen) && absl::StrContains(source, kThinkClose)) {
    SetReasoning(format, kThinkOpen, kThinkClose);
  } else if (absl::StrContains(source, kMistralThinkOpen) && absl::StrContains(source, kMistralThinkClose)) {
    SetReasoning(format, kMistralThinkOpen, kMistralThinkClose);
  }
  return format;
}

absl::StatusOr<ChatOutputFormat> ResolveChatOutputFormat(absl::string_view source, absl::string_view tool_call_parser,
                                                         absl::string_view reasoning_parser) {
  ChatOutputFormat format = ChatOutputFormatOfTemplate(source);
  if (tool_call_parser != "auto") {
    format.tools_origin = "--tool_call_parser";
    if (tool_call_parser == "hermes") {
      format.tools = ToolCallSyntax::kHermes;
    } else if (tool_call_parser == "llama3_json") {
      format.tools = ToolCallSyntax::kLlama3Json;
    } else if (tool_call_parser == "mistral") {
      format.tools = ToolCallSyntax::kMistral;
    } else if (tool_call_parser == "mistral_v11") {
      format.tools = ToolCallSyntax::kMistralV11;
    } else if (tool_call_parser == "pythonic") {
      format.tools = ToolCallSyntax::kPythonic;
    } else if (tool_call_parser == "none") {
      format.tools = ToolCallSyntax::kNone;
    } else {
      return InvalidField("--tool_call_parser", absl::StrCat("'", tool_call_parser,
                                                             "' is not auto, hermes, llama3_json, mistral, mistral_v11, pythonic or none"));
    }
  }
  if (reasoning_parser == "qwen3") {
    SetReasoning(format, kThinkOpen, kThinkClose);
  } else if (reasoning_parser == "mistral") {
    SetReasoning(format, kMistralThinkOpen, kMistralThinkClose);
  } else if (reasoning_parser == "none") {
    format.reasoning = false;
  } else if (reasoning_parser != "auto") {
    return InvalidField("--reasoning_parser", absl::StrCat("'", reasoning_parser, "' is not auto, qwen3, mistral or none"));
  }
  return format;
}

}  // namespace arach::server
