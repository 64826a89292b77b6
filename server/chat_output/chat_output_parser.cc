#include "server/chat_output/chat_output_parser.h"

#include <cctype>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "server/chat_output/python_calls.h"

namespace arach::server {
namespace {

using json = nlohmann::json;

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

absl::string_view StripLeadingSpace(absl::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

absl::string_view StripTrailingSpace(absl::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The length of the longest proper prefix of `marker` that `text` ends with.
size_t PartialMarkerAtEnd(absl::string_view text, absl::string_view marker) {
  for (size_t len = std::min(text.size(), marker.size() - 1); len > 0; --len) {
    if (absl::EndsWith(text, marker.substr(0, len))) return len;
  }
  return 0;
}

std::optional<json> ParseJson(absl::string_view text) {
  json parsed = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
}

// {"name": ..., "arguments" | "parameters": {...} or its JSON text} as a call.
std::optional<ParsedToolCall> CallOf(const json& call) {
  if (!call.is_object()) return std::nullopt;
  const auto name = call.find("name");
  if (name == call.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  auto arguments = call.find("arguments");
  if (arguments == call.end()) arguments = call.find("parameters");
  if (arguments == call.end()) return std::nullopt;
  if (arguments->is_string()) {
    std::optional<json> parsed = ParseJson(arguments->get<std::string>());
    if (!parsed || !parsed->is_object()) return std::nullopt;
    return ParsedToolCall{name->get<std::string>(), parsed->dump()};
  }
  if (!arguments->is_object()) return std::nullopt;
  return ParsedToolCall{name->get<std::string>(), arguments->dump()};
}

// `text` cut at the semicolons outside JSON strings, objects and arrays.
std::vector<absl::string_view> SplitTopLevel(absl::string_view text, char separator) {
  std::vector<absl::string_view> parts;
  int depth = 0;
  bool in_string = false, escaped = false;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == separator && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

}  // namespace

ChatOutputParser::ChatOutputParser(const ChatOutputFormat& format, bool parse_tools, TurnStart start)
    : format_(format),
      parse_tools_(parse_tools && format.tools != ToolCallSyntax::kNone),
      phase_(start == TurnStart::kReasoning                      ? Phase::kReasoning
             : start == TurnStart::kOpen && format.reasoning ? Phase::kStart
                                                               : Phase::kContent) {}

ChatOutputDelta ChatOutputParser::Feed(absl::string_view text) {
  pending_.append(text.data(), text.size());
  ChatOutputDelta out;
  Step(out, /*final=*/false);
  return out;
}

ChatOutputDelta ChatOutputParser::Finish() {
  ChatOutputDelta out;
  Step(out, /*final=*/true);
  return out;
}

void ChatOutputParser::AddCalls(ChatOutputDelta& out, std::vector<ParsedToolCall> calls) {
  for (ParsedToolCall& call : calls) out.tool_calls.push_back(std::move(call));
  num_tool_calls_ += static_cast<int>(calls.size());
  drop_leading_space_ = true;
}

void ChatOutputParser::Consume(size_t n) {
  pending_.erase(0, n);
  consumed_ += n;
}

void ChatOutputParser::AppendContent(ChatOutputDelta& out, absl::string_view text) {
  if (drop_leading_space_) text = StripLeadingSpace(text);
  if (text.empty()) return;
  drop_leading_space_ = false;
  content_started_ = true;
  out.content.append(text.data(), text.size());
  const size_t begin = consumed_ + static_cast<size_t>(text.data() - pending_.data());  // `text` lies in pending_
  if (!out.content_from.empty() && out.content_from.back().end == begin) {
    out.content_from.back().end = begin + text.size();
  } else {
    out.content_from.push_back({begin, begin + text.size()});
  }
}

void ChatOutputParser::Step(ChatOutputDelta& out, bool final) {
  for (;;) {
    switch (phase_) {
      case Phase::kStart:
        if (absl::StartsWith(pending_, kThinkOpen)) {
          Consume(kThinkOpen.size());
          phase_ = Phase::kReasoning;
          continue;
        }
        if (!final && absl::StartsWith(kThinkOpen, pending_)) return;  // may still become <think>
        phase_ = Phase::kContent;
        continue;

      case Phase::kReasoning: {
        const size_t close = absl::string_view(pending_).find(kThinkClose);
        if (close != absl::string_view::npos) {
          out.reasoning += pending_.substr(0, close);
          Consume(close + kThinkClose.size());
          phase_ = Phase::kContent;
          drop_leading_space_ = true;  // the answer starts after the blank line that follows </think>
          continue;
        }
        const size_t keep = final ? 0 : PartialMarkerAtEnd(pending_, kThinkClose);
        out.reasoning += pending_.substr(0, pending_.size() - keep);
        Consume(pending_.size() - keep);
        return;
      }

      case Phase::kContent: {
        if (parse_tools_ && TurnOpensWithCalls() && !content_started_ && num_tool_calls_ == 0) {
          // A Llama 3 call (or a pythonic list of calls) is the whole turn: it opens it.
          const Opening opening = TurnOpening(StripLeadingSpace(pending_));
          if (opening == Opening::kCalls) {
            phase_ = Phase::kToolTail;
            continue;
          }
          if (opening == Opening::kUndecided && !final) return;
          parse_tools_ = false;  // the turn is plain content
        }
        absl::string_view marker;
        if (parse_tools_ && format_.tools == ToolCallSyntax::kHermes) marker = kHermesOpen;
        if (parse_tools_ && format_.tools == ToolCallSyntax::kMistral) marker = kMistralToolCalls;
        if (!marker.empty()) {
          const size_t at = absl::string_view(pending_).find(marker);
          if (at != absl::string_view::npos) {
            AppendContent(out, StripTrailingSpace(absl::string_view(pending_).substr(0, at)));
            Consume(at);
            phase_ = format_.tools == ToolCallSyntax::kHermes ? Phase::kHermesCall : Phase::kToolTail;
            continue;
          }
        }
        // Hold back what may still open a call, and trailing whitespace (dropped if a call follows).
        size_t end = pending_.size();
        if (!final) {
          if (!marker.empty()) end -= PartialMarkerAtEnd(pending_, marker);
          while (end > 0 && IsSpace(pending_[end - 1])) --end;
        } else if (num_tool_calls_ > 0) {
          end = StripTrailingSpace(pending_).size();
        }
        AppendContent(out, absl::string_view(pending_).substr(0, end));
        if (final) {
          Consume(pending_.size());
        } else {
          Consume(end);
        }
        return;
      }

      case Phase::kHermesCall: {
        const size_t close = absl::string_view(pending_).find(kHermesClose);
        if (close == absl::string_view::npos) {
          if (final) {  // cut off inside the call: its text is content
            AppendContent(out, pending_);
            Consume(pending_.size());
          }
          return;
        }
        const absl::string_view body = absl::string_view(pending_).substr(kHermesOpen.size(), close - kHermesOpen.size());
        std::optional<json> parsed = ParseJson(body);
        std::optional<ParsedToolCall> call = parsed ? CallOf(*parsed) : std::nullopt;
        if (call) {
          AddCalls(out, {std::move(*call)});
        } else {
          AppendContent(out, absl::string_view(pending_).substr(0, close + kHermesClose.size()));
        }
        Consume(close + kHermesClose.size());
        phase_ = Phase::kContent;
        continue;
      }

      case Phase::kToolTail: {
        if (!final) return;  // the calls run to the end of the turn
        std::vector<ParsedToolCall> calls;
        if (ParseTail(pending_, calls)) {
          AddCalls(out, std::move(calls));
        } else {
          AppendContent(out, pending_);
        }
        Consume(pending_.size());
        return;
      }
    }
  }
}

ChatOutputParser::Opening ChatOutputParser::TurnOpening(absl::string_view start) const {
  if (start.empty()) return Opening::kUndecided;
  if (format_.tools == ToolCallSyntax::kPythonic) {  // `[` and a function's name: "[1] is a citation" is content at once
    if (!absl::StartsWith(start, "[")) return Opening::kContent;
    const absl::string_view inside = StripLeadingSpace(start.substr(1));
    if (inside.empty()) return Opening::kUndecided;
    return IsPythonIdentifier(inside.substr(0, 1)) ? Opening::kCalls : Opening::kContent;
  }
  if (absl::StartsWith(start, kLlamaPythonTag) || absl::StartsWith(start, "{")) return Opening::kCalls;
  return absl::StartsWith(kLlamaPythonTag, start) ? Opening::kUndecided : Opening::kContent;
}

bool ChatOutputParser::ParseTail(absl::string_view text, std::vector<ParsedToolCall>& calls) const {
  text = StripTrailingSpace(StripLeadingSpace(text));
  if (format_.tools == ToolCallSyntax::kMistral) {
    if (!absl::ConsumePrefix(&text, kMistralToolCalls)) return false;
    std::optional<json> list = ParseJson(text);
    if (!list || !list->is_array() || list->empty()) return false;
    for (const json& item : *list) {
      std::optional<ParsedToolCall> call = CallOf(item);
      if (!call) return false;
      calls.push_back(std::move(*call));
    }
    return true;
  }
  if (format_.tools == ToolCallSyntax::kPythonic) {
    std::optional<std::vector<ParsedToolCall>> parsed = ParsePythonCalls(text);
    if (!parsed) return false;
    calls = std::move(*parsed);
    return true;
  }
  absl::ConsumePrefix(&text, kLlamaPythonTag);
  for (absl::string_view part : SplitTopLevel(text, ';')) {
    std::optional<json> parsed = ParseJson(StripLeadingSpace(part));
    std::optional<ParsedToolCall> call = parsed ? CallOf(*parsed) : std::nullopt;
    if (!call) return false;
    calls.push_back(std::move(*call));
  }
  return !calls.empty();
}

}  // namespace arach::server
