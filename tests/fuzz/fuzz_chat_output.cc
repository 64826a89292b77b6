// libFuzzer: arbitrary model output through the chat output parser (server/chat_output), in every tool-call syntax
// with and without reasoning: it never crashes, and the text fed in two pieces (split where the input's first
// byte says) gives exactly what it gives fed whole, so streamed answers always assemble to unstreamed ones.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/chat_output/chat_output_parser.h"

namespace {

using arach::server::ChatOutputDelta;
using arach::server::ChatOutputFormat;
using arach::server::ChatOutputParser;

std::string Flatten(const ChatOutputDelta& a, const ChatOutputDelta& b, const ChatOutputDelta& c) {
  std::string out = "R:" + a.reasoning + b.reasoning + c.reasoning + "\nC:" + a.content + b.content + c.content;
  for (const ChatOutputDelta* d : {&a, &b, &c}) {
    for (const auto& call : d->tool_calls) out += "\nT:" + call.name + "(" + call.arguments + ")";
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  ChatOutputFormat format;
  format.tools = static_cast<arach::server::ToolCallSyntax>(data[0] % 4);
  format.reasoning = (data[0] & 4) != 0;
  const bool parse_tools = (data[0] & 8) != 0;
  const arach::server::TurnStart start = (data[0] & 16)   ? arach::server::TurnStart::kReasoning
                                         : (data[0] & 32) ? arach::server::TurnStart::kContent
                                                          : arach::server::TurnStart::kOpen;
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  const size_t cut = text.empty() ? 0 : data[1] % (text.size() + 1);

  ChatOutputParser whole(format, parse_tools, start);
  const ChatOutputDelta w = whole.Feed(text);
  const std::string expected = Flatten(w, whole.Finish(), {});
  ChatOutputParser split(format, parse_tools, start);
  const ChatOutputDelta first = split.Feed(text.substr(0, cut));
  const ChatOutputDelta second = split.Feed(text.substr(cut));
  if (Flatten(first, second, split.Finish()) != expected) std::abort();
  return 0;
}
