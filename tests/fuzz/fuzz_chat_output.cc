// libFuzzer: arbitrary model output through the chat output parser (server/chat_output), in every tool-call syntax
// with and without reasoning: it never crashes, and the text fed in two pieces (split where the input's first
// byte says) gives exactly what it gives fed whole, so streamed answers always assemble to unstreamed ones; the
// content is always the text at the spans it says it came from (in order, within the text).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
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

// The content of `deltas` is the text of `text` at their spans, which are in order and within it.
void CheckContentSpans(const std::string& text, std::initializer_list<const ChatOutputDelta*> deltas) {
  std::string content, from_spans;
  size_t last_end = 0;
  for (const ChatOutputDelta* d : deltas) {
    content += d->content;
    for (const arach::server::TextSpan& span : d->content_from) {
      if (span.begin < last_end || span.end <= span.begin || span.end > text.size()) std::abort();
      from_spans += text.substr(span.begin, span.end - span.begin);
      last_end = span.end;
    }
  }
  if (content != from_spans) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  ChatOutputFormat format;
  format.tools = (data[0] & 64) ? arach::server::ToolCallSyntax::kPythonic : static_cast<arach::server::ToolCallSyntax>(data[0] % 4);
  format.reasoning = (data[0] & 4) != 0;
  const bool parse_tools = (data[0] & 8) != 0;
  const arach::server::TurnStart start = (data[0] & 16)   ? arach::server::TurnStart::kReasoning
                                         : (data[0] & 32) ? arach::server::TurnStart::kContent
                                                          : arach::server::TurnStart::kOpen;
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  const size_t cut = text.empty() ? 0 : data[1] % (text.size() + 1);

  ChatOutputParser whole(format, parse_tools, start);
  const ChatOutputDelta w = whole.Feed(text);
  const ChatOutputDelta w_rest = whole.Finish();
  CheckContentSpans(text, {&w, &w_rest});
  const std::string expected = Flatten(w, w_rest, {});
  ChatOutputParser split(format, parse_tools, start);
  const ChatOutputDelta first = split.Feed(text.substr(0, cut));
  const ChatOutputDelta second = split.Feed(text.substr(cut));
  const ChatOutputDelta rest = split.Finish();
  CheckContentSpans(text, {&first, &second, &rest});
  if (Flatten(first, second, rest) != expected) std::abort();
  return 0;
}
