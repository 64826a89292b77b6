#include "server/chat_output/chat_output_parser.h"

#include <cctype>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "server/chat_output/python_calls.h"

namespace arach::server {

void JsonNesting::Read(char c) {
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
  }
}

namespace {

using ordered_json = nlohmann::ordered_json;

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

std::optional<ordered_json> ParseJson(absl::string_view text) {
  ordered_json parsed = ordered_json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
}

// {"name": ..., "arguments" | "parameters": {...} or its JSON text} as a call (the arguments' keys in the model's order).
std::optional<ParsedToolCall> CallOf(const ordered_json& call) {
  if (!call.is_object()) return std::nullopt;
  const auto name = call.find("name");
  if (name == call.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  auto arguments = call.find("arguments");
  if (arguments == call.end()) arguments = call.find("parameters");
  if (arguments == call.end()) return std::nullopt;
  if (arguments->is_string()) {
    std::optional<ordered_json> parsed = ParseJson(arguments->get<std::string>());
    if (!parsed || !parsed->is_object()) return std::nullopt;
    return ParsedToolCall{name->get<std::string>(), parsed->dump()};
  }
  if (!arguments->is_object()) return std::nullopt;
  return ParsedToolCall{name->get<std::string>(), arguments->dump()};
}

// Whether the value `nesting` has read is complete (outside every string, object and array).
bool ValueClosed(const JsonNesting& nesting) { return nesting.depth == 0 && !nesting.in_string; }

// Reads `text` into `nesting` up to where the value being read closes (a string, object or array whose first byte
// was read first, here or before): the bytes read; all of `text` when it ends first.
size_t ReadToValueEnd(JsonNesting& nesting, absl::string_view text) {
  size_t n = 0;
  while (n < text.size()) {
    nesting.Read(text[n++]);
    if (ValueClosed(nesting)) break;
  }
  return n;
}

// Whether text continues as expected: yes, not (yet) known because it ends first, or no.
enum class Match { kYes, kMaybe, kNo };

// Reads the head of a JSON call, the shape the tool-call constraint writes: `{"name": "<function>", "arguments": `
// ("parameters" too) up to the arguments' `{`, with any whitespace between the tokens.
class CallHeadReader {
 public:
  explicit CallHeadReader(absl::string_view text) : text_(text) {}

  // `name` and the head's length (the arguments' `{` is next) when kYes.
  Match Read(std::string& name, size_t& length) {
    for (Match m : {Literal("{"), Literal("\"name\""), Literal(":")}) {
      if (m != Match::kYes) return m;
    }
    if (Match m = String(name); m != Match::kYes) return m;
    if (Match m = Literal(","); m != Match::kYes) return m;
    Match m = Literal("\"arguments\"");
    if (m == Match::kNo) m = Literal("\"parameters\"");
    if (m != Match::kYes) return m;
    if (m = Literal(":"); m != Match::kYes) return m;
    return ArgumentsOpen(length);  // (arguments as a string, or not an object: kNo, the call comes whole)
  }

  // The head of a Mistral v11+ call after its [TOOL_CALLS]: `<function>[ARGS]`, `<function>[CALL_ID]<id>[ARGS]`,
  // or `<function>` alone (v11's first models), up to the arguments' `{`.
  Match ReadNamed(std::string& name, size_t& length) {
    if (Match m = Word(name); m != Match::kYes) return m;
    if (Match m = Literal(kMistralCallId); m == Match::kMaybe) {
      return m;
    } else if (m == Match::kYes) {
      std::string id;
      if (m = Word(id); m != Match::kYes) return m;
    }
    if (Literal(kMistralArgs) == Match::kMaybe) return Match::kMaybe;  // (absent: v11's first form)
    return ArgumentsOpen(length);
  }

 private:
  // The arguments' `{` after optional whitespace, not read: the head's length (its offset) when kYes.
  Match ArgumentsOpen(size_t& length) {
    SkipSpace();
    if (at_ == text_.size()) return Match::kMaybe;
    if (text_[at_] != '{') return Match::kNo;
    length = at_;
    return Match::kYes;
  }
  void SkipSpace() {
    while (at_ < text_.size() && IsSpace(text_[at_])) ++at_;
  }
  // `literal` after optional whitespace (read when kYes; the whitespace is read in any case, which the reads after
  // it skip alike).
  Match Literal(absl::string_view literal) {
    SkipSpace();
    const absl::string_view rest = text_.substr(at_);
    if (absl::StartsWith(rest, literal)) {
      at_ += literal.size();
      return Match::kYes;
    }
    return absl::StartsWith(literal, rest) ? Match::kMaybe : Match::kNo;
  }
  // A function's name or a call's id after optional whitespace: letters, digits, `_`, `-` and `.`, up to what
  // follows it (kMaybe while the text may still go on with more of it).
  Match Word(std::string& out) {
    SkipSpace();
    const size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) != 0 || text_[at_] == '_' ||
                                  text_[at_] == '-' || text_[at_] == '.')) {
      ++at_;
    }
    if (at_ == text_.size()) return Match::kMaybe;
    if (at_ == start) return Match::kNo;
    out = std::string(text_.substr(start, at_ - start));
    return Match::kYes;
  }
  // A JSON string (a non-empty name) after optional whitespace.
  Match String(std::string& out) {
    SkipSpace();
    if (at_ == text_.size()) return Match::kMaybe;
    if (text_[at_] != '"') return Match::kNo;
    JsonNesting nesting;
    const size_t length = ReadToValueEnd(nesting, text_.substr(at_));
    if (!ValueClosed(nesting)) return Match::kMaybe;
    std::optional<ordered_json> parsed = ParseJson(text_.substr(at_, length));
    if (!parsed || !parsed->is_string() || parsed->get<std::string>().empty()) return Match::kNo;
    out = parsed->get<std::string>();
    at_ += length;
    return Match::kYes;
  }

  absl::string_view text_;
  size_t at_ = 0;
};

// `text` cut at `separator` outside JSON strings, objects and arrays.
std::vector<absl::string_view> SplitTopLevel(absl::string_view text, char separator) {
  std::vector<absl::string_view> parts;
  JsonNesting nesting;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool outside = ValueClosed(nesting);
    nesting.Read(text[i]);
    if (outside && text[i] == separator) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

}  // namespace

void AddToolCallPiece(ChatOutputDelta& delta, ToolCallPiece piece) {
  if (!delta.tool_calls.empty() && delta.tool_calls.back().index == piece.index && !delta.tool_calls.back().ends) {
    ToolCallPiece& last = delta.tool_calls.back();
    last.arguments += piece.arguments;
    last.ends = piece.ends;
    return;
  }
  delta.tool_calls.push_back(std::move(piece));
}

void AppendDelta(ChatOutputDelta& delta, ChatOutputDelta more) {
  delta.reasoning += more.reasoning;
  delta.content += more.content;
  delta.content_from.insert(delta.content_from.end(), more.content_from.begin(), more.content_from.end());
  for (ToolCallPiece& piece : more.tool_calls) AddToolCallPiece(delta, std::move(piece));
}

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

void ChatOutputParser::AddWholeCalls(ChatOutputDelta& out, std::vector<ParsedToolCall> calls) {
  for (ParsedToolCall& call : calls) {
    AddToolCallPiece(out, {num_tool_calls_++, std::move(call.name), std::move(call.arguments), /*ends=*/true});
  }
  drop_leading_space_ = true;
}

void ChatOutputParser::OpenCall(ChatOutputDelta& out, std::string name) {
  AddToolCallPiece(out, {num_tool_calls_++, std::move(name), "", /*ends=*/false});
  arguments_ = JsonNesting();
  call_object_closed_ = false;
  call_open_ = true;
  phase_ = Phase::kCallArguments;
}

void ChatOutputParser::EndCall(ChatOutputDelta& out) {
  if (call_open_) AddToolCallPiece(out, {num_tool_calls_ - 1, "", "", /*ends=*/true});
  call_open_ = false;
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
        if (absl::StartsWith(pending_, format_.think_open)) {
          Consume(format_.think_open.size());
          phase_ = Phase::kReasoning;
          continue;
        }
        if (!final && absl::StartsWith(format_.think_open, pending_)) return;  // may still become <think>
        phase_ = Phase::kContent;
        continue;

      case Phase::kReasoning: {
        const size_t close = absl::string_view(pending_).find(format_.think_close);
        if (close != absl::string_view::npos) {
          out.reasoning += pending_.substr(0, close);
          Consume(close + format_.think_close.size());
          phase_ = Phase::kContent;
          drop_leading_space_ = true;  // the answer starts after the blank line that follows </think>
          continue;
        }
        const size_t keep = final ? 0 : PartialMarkerAtEnd(pending_, format_.think_close);
        out.reasoning += pending_.substr(0, pending_.size() - keep);
        Consume(pending_.size() - keep);
        return;
      }

      case Phase::kContent:
        if (!StepContent(out, final)) return;
        continue;
      case Phase::kHermesCall:
        if (!StepHermesCall(out, final)) return;
        continue;
      case Phase::kCallHead:
        if (!StepCallHead(out, final)) return;
        continue;
      case Phase::kCallArguments:
        if (!StepCallArguments(out, final)) return;
        continue;
      case Phase::kCallClose:
        if (!StepCallClose(out, final)) return;
        continue;
      case Phase::kPythonList:
        if (!StepPythonList(out, final)) return;
        continue;

      case Phase::kToolTail: {
        if (!final) return;  // the calls run to the end of the turn
        std::vector<ParsedToolCall> calls;
        if (ParseTail(pending_, calls)) {
          AddWholeCalls(out, std::move(calls));
        } else {
          AppendContent(out, pending_);
        }
        Consume(pending_.size());
        return;
      }
    }
  }
}

bool ChatOutputParser::StepContent(ChatOutputDelta& out, bool final) {
  if (parse_tools_ && TurnOpensWithCalls() && !content_started_ && num_tool_calls_ == 0) {
    // A Llama 3 call (or a pythonic list of calls) is the whole turn: it opens it.
    const Opening opening = TurnOpening(StripLeadingSpace(pending_));
    if (opening == Opening::kCalls) {
      phase_ = format_.tools == ToolCallSyntax::kPythonic ? Phase::kPythonList : Phase::kCallHead;
      list_opens_ = true;
      return true;
    }
    if (opening == Opening::kUndecided && !final) return false;
    parse_tools_ = false;  // the turn is plain content
  }
  absl::string_view marker;
  if (parse_tools_ && format_.tools == ToolCallSyntax::kHermes) marker = kHermesOpen;
  if (parse_tools_ && IsMistralSyntax(format_.tools)) marker = kMistralToolCalls;
  if (!marker.empty()) {
    const size_t at = absl::string_view(pending_).find(marker);
    if (at != absl::string_view::npos) {
      AppendContent(out, StripTrailingSpace(absl::string_view(pending_).substr(0, at)));
      Consume(at);  // the marker stays: a call that comes whole is read from it
      phase_ = format_.tools == ToolCallSyntax::kHermes ? Phase::kHermesCall : Phase::kCallHead;
      list_opens_ = true;
      return true;
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
  Consume(final ? pending_.size() : end);
  return false;
}

bool ChatOutputParser::StepHermesCall(ChatOutputDelta& out, bool final) {
  std::string name;
  size_t head = 0;
  const Match streams = CallHeadReader(absl::string_view(pending_).substr(kHermesOpen.size())).Read(name, head);
  if (streams == Match::kYes) {
    Consume(kHermesOpen.size() + head);
    OpenCall(out, std::move(name));
    return true;
  }
  const size_t close = absl::string_view(pending_).find(kHermesClose);
  if (streams == Match::kMaybe || close == absl::string_view::npos) {
    if (final) {  // cut off inside the call's head or text: it is content
      AppendContent(out, pending_);
      Consume(pending_.size());
    }
    return false;
  }
  // A call of another shape comes whole with its close.
  const absl::string_view body = absl::string_view(pending_).substr(kHermesOpen.size(), close - kHermesOpen.size());
  std::optional<ordered_json> parsed = ParseJson(body);
  std::optional<ParsedToolCall> call = parsed ? CallOf(*parsed) : std::nullopt;
  if (call) {
    AddWholeCalls(out, {std::move(*call)});
  } else {
    AppendContent(out, absl::string_view(pending_).substr(0, close + kHermesClose.size()));
  }
  Consume(close + kHermesClose.size());
  phase_ = Phase::kContent;
  return true;
}

bool ChatOutputParser::StepCallHead(ChatOutputDelta& out, bool final) {
  if (format_.tools == ToolCallSyntax::kMistralV11) return StepNamedCallHead(out, final);
  // Where the head starts: the first call opens the syntax's list (Mistral's `[TOOL_CALLS][`, Llama 3's optional
  // <|python_tag|>); later ones follow the separator kCallClose read.
  absl::string_view text = StripLeadingSpace(pending_);
  Match opens = Match::kYes;
  if (list_opens_ && format_.tools == ToolCallSyntax::kMistral) {
    text = StripLeadingSpace(text.substr(kMistralToolCalls.size()));  // the marker is there (StepContent)
    opens = text.empty() ? Match::kMaybe : text.front() == '[' ? Match::kYes : Match::kNo;
    if (opens == Match::kYes) text = StripLeadingSpace(text.substr(1));
  } else if (list_opens_ && absl::ConsumePrefix(&text, kLlamaPythonTag)) {
    text = StripLeadingSpace(text);
  }
  std::string name;
  size_t head = 0;
  const Match streams = opens == Match::kYes ? CallHeadReader(text).Read(name, head) : opens;
  const size_t before = static_cast<size_t>(text.data() - pending_.data());
  if (streams == Match::kYes) {
    Consume(before + head);
    OpenCall(out, std::move(name));
    list_opens_ = false;
    return true;
  }
  if (streams == Match::kNo && opens == Match::kYes && !text.empty() && text.front() == '{') {
    // A call of another shape comes whole when its object closes.
    JsonNesting nesting;
    const size_t end = ReadToValueEnd(nesting, text);
    if (!ValueClosed(nesting)) {
      if (!final) return false;
    } else if (std::optional<ordered_json> parsed = ParseJson(text.substr(0, end)); parsed) {
      if (std::optional<ParsedToolCall> call = CallOf(*parsed); call) {
        Consume(before + end);
        AddWholeCalls(out, {std::move(*call)});
        list_opens_ = false;
        call_object_closed_ = true;  // what closes or separates calls comes next
        phase_ = Phase::kCallClose;
        return true;
      }
    }
  } else if (streams == Match::kMaybe && !final) {
    return false;
  }
  // Not a call: a list that does not open with one is read whole with the turn's end (its calls, or content);
  // after a separator, the rest is content.
  phase_ = list_opens_ ? Phase::kToolTail : Phase::kContent;
  return true;
}

bool ChatOutputParser::StepNamedCallHead(ChatOutputDelta& out, bool final) {
  // pending_ starts with the call's [TOOL_CALLS] (StepContent and StepCallClose found it there).
  std::string name;
  size_t head = 0;
  const Match streams = CallHeadReader(absl::string_view(pending_).substr(kMistralToolCalls.size())).ReadNamed(name, head);
  if (streams == Match::kYes) {
    Consume(kMistralToolCalls.size() + head);
    OpenCall(out, std::move(name));
    call_object_closed_ = true;  // the arguments are all of the call: what follows them closes or separates calls
    return true;
  }
  if (streams == Match::kMaybe && !final) return false;
  // Not a call's head, or cut off inside it: the marker and what follows are content (a later marker may open a call).
  AppendContent(out, absl::string_view(pending_).substr(0, kMistralToolCalls.size()));
  Consume(kMistralToolCalls.size());
  phase_ = Phase::kContent;
  return true;
}

bool ChatOutputParser::StepCallArguments(ChatOutputDelta& out, bool final) {
  const size_t end = ReadToValueEnd(arguments_, pending_);
  const bool closed = end > 0 && ValueClosed(arguments_);
  if (end > 0) AddToolCallPiece(out, {num_tool_calls_ - 1, "", pending_.substr(0, end), /*ends=*/false});
  Consume(end);
  if (closed) {
    phase_ = Phase::kCallClose;
    return true;
  }
  return false;  // at the end: cut off inside the arguments (max_tokens), the call keeps what was written, never ended
}

bool ChatOutputParser::StepCallClose(ChatOutputDelta& out, bool final) {
  // The call's `}`, then the syntax's close (Hermes: </tool_call>) or separator (Llama 3: `;`, Mistral: `,`, or
  // the list's `]`). Anything else ends the call and is content, where a marker may open the next call (Mistral v11's
  // calls have no `}` and no separator of their own: each opens with its [TOOL_CALLS]).
  const absl::string_view text = StripLeadingSpace(pending_);
  const size_t spaces = pending_.size() - text.size();
  if (text.empty()) {
    if (!final) return false;
    EndCall(out);
    Consume(pending_.size());
    phase_ = Phase::kContent;
    return true;
  }
  if (!call_object_closed_) {
    if (text.front() == '}') {
      call_object_closed_ = true;
      Consume(spaces + 1);
      return true;
    }
  } else if (format_.tools == ToolCallSyntax::kHermes) {
    if (absl::StartsWith(text, kHermesClose)) {
      EndCall(out);
      Consume(spaces + kHermesClose.size());
      phase_ = Phase::kContent;
      return true;
    }
    if (absl::StartsWith(kHermesClose, text) && !final) return false;
  } else if (format_.tools != ToolCallSyntax::kMistralV11) {
    const char separator = format_.tools == ToolCallSyntax::kMistral ? ',' : ';';
    const char next = text.front();
    if (next == separator || (format_.tools == ToolCallSyntax::kMistral && next == ']')) {
      EndCall(out);
      Consume(spaces + 1);  // (`text` lay in pending_)
      phase_ = next == separator ? Phase::kCallHead : Phase::kContent;
      return true;
    }
  }
  EndCall(out);
  phase_ = Phase::kContent;
  return true;
}

bool ChatOutputParser::StepPythonList(ChatOutputDelta& out, bool final) {
  // pending_ holds the list from its `[` (StepContent saw it) until its first call is read, then what follows the
  // last call read: `, ` and the next call, or the list's `]`.
  absl::string_view text = StripLeadingSpace(pending_);
  if (num_tool_calls_ > 0) {
    if (text.empty()) {
      if (!final) return false;
      Consume(pending_.size());  // cut off before the list's `]`: the calls read are the turn's
      phase_ = Phase::kContent;
      return true;
    }
    if (text.front() == ']') {
      Consume(pending_.size() - text.size() + 1);
      phase_ = Phase::kContent;  // what follows the list is content
      return true;
    }
    if (text.front() != ',') {
      phase_ = Phase::kContent;
      return true;
    }
  }
  const PythonCallRead read = ReadPythonCall(text.substr(1));  // after the `[` or the `,`
  if (read.result == PythonCallRead::Result::kIncomplete && !final) return false;
  if (read.result != PythonCallRead::Result::kCall) {
    parse_tools_ = false;  // not a call, or cut off inside one: the rest of the turn is content (calls open it)
    phase_ = Phase::kContent;
    return true;
  }
  Consume(pending_.size() - text.size() + 1 + read.length);
  AddWholeCalls(out, {read.call});
  return true;
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
    std::optional<ordered_json> list = ParseJson(text);
    if (!list || !list->is_array() || list->empty()) return false;
    for (const ordered_json& item : *list) {
      std::optional<ParsedToolCall> call = CallOf(item);
      if (!call) return false;
      calls.push_back(std::move(*call));
    }
    return true;
  }
  absl::ConsumePrefix(&text, kLlamaPythonTag);
  for (absl::string_view part : SplitTopLevel(text, ';')) {
    std::optional<ordered_json> parsed = ParseJson(StripLeadingSpace(part));
    std::optional<ParsedToolCall> call = parsed ? CallOf(*parsed) : std::nullopt;
    if (!call) return false;
    calls.push_back(std::move(*call));
  }
  return !calls.empty();
}

}  // namespace arach::server
