// libFuzzer: arbitrary model output through the chat output parser (server/chat_output), in every tool-call syntax
// with and without reasoning: it never crashes, and the text fed in two pieces (split where the input's first
// byte says) gives exactly what it gives fed whole, so streamed answers always assemble to unstreamed ones; a
// call's pieces come in order; the content is always the text at the spans it says it came from (in order,
// within the text).
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

// The three deltas joined (each call's pieces in one), written out; aborts on pieces out of order: a call numbered
// out of turn, a piece after its call ended, a later piece naming the call again.
std::string Flatten(const ChatOutputDelta& a, const ChatOutputDelta& b, const ChatOutputDelta& c) {
  ChatOutputDelta joined;
  int opened = 0;
  bool open = false;
  for (const ChatOutputDelta* d : {&a, &b, &c}) {
    for (const arach::server::ToolCallPiece& piece : d->tool_calls) {
      if (!piece.name.empty()) {
        if (open || piece.index != opened) std::abort();
        ++opened;
        open = true;
      } else if (!open || piece.index != opened - 1) {
        std::abort();
      }
      if (piece.ends) open = false;
    }
    arach::server::AppendDelta(joined, *d);
  }
  std::string out = "R:" + joined.reasoning + "\nC:" + joined.content;
  for (const auto& call : joined.tool_calls) out += "\nT:" + call.name + "(" + call.arguments + (call.ends ? ")" : "...");
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
  format.tools = (data[0] & 64)    ? arach::server::ToolCallSyntax::kPythonic
                 : (data[0] & 128) ? arach::server::ToolCallSyntax::kMistralV11
                                   : static_cast<arach::server::ToolCallSyntax>(data[0] % 4);  // none, hermes, llama3_json, mistral
  format.reasoning = (data[0] & 4) != 0;
  if (format.tools == arach::server::ToolCallSyntax::kMistralV11) {  // as Magistral writes its reasoning
    format.think_open = arach::server::kMistralThinkOpen;
    format.think_close = arach::server::kMistralThinkClose;
  }
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
