// The chat output parser on each syntax: whole answers, and the same text streamed in every two-piece split
// and one byte at a time, which must assemble to the whole answer. Also the tools and tool_choice readers.
#include "server/chat_output/chat_output_parser.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/chat_output/tools.h"

namespace arach::server {

void PrintTo(const ToolCallPiece& p, std::ostream* os) {
  *os << "{" << p.index << ", \"" << p.name << "\", \"" << p.arguments << "\", " << (p.ends ? "ends" : "goes on") << "}";
}

namespace {

struct Parsed {
  std::string reasoning, content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments: each call's pieces joined
  int ended = 0;                                           // calls whose last piece said so
  bool operator==(const Parsed&) const = default;
};

void Add(Parsed& p, const ChatOutputDelta& d) {
  p.reasoning += d.reasoning;
  p.content += d.content;
  for (const ToolCallPiece& piece : d.tool_calls) {
    if (!piece.name.empty()) {
      ASSERT_EQ(piece.index, static_cast<int>(p.calls.size())) << "calls are numbered in order";
      ASSERT_EQ(p.ended, piece.index) << "a call opens after the one before it ended";
      p.calls.emplace_back(piece.name, "");
    }
    ASSERT_EQ(piece.index + 1, static_cast<int>(p.calls.size())) << "a piece continues the last call opened";
    ASSERT_EQ(p.ended, piece.index) << "no piece after a call's end";
    p.calls.back().second += piece.arguments;
    if (piece.ends) ++p.ended;
  }
}

Parsed Whole(const ChatOutputFormat& format, const std::string& text, bool tools = true, TurnStart start = TurnStart::kOpen) {
  ChatOutputParser parser(format, tools, start);
  Parsed p;
  Add(p, parser.Feed(text));
  Add(p, parser.Finish());
  return p;
}

// Every split of `text` in two, and byte by byte, give the whole answer.
void ExpectStreamsLikeWhole(const ChatOutputFormat& format, const std::string& text, bool tools = true) {
  const Parsed whole = Whole(format, text, tools);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    ChatOutputParser parser(format, tools, TurnStart::kOpen);
    Parsed p;
    Add(p, parser.Feed(text.substr(0, cut)));
    Add(p, parser.Feed(text.substr(cut)));
    Add(p, parser.Finish());
    ASSERT_EQ(p, whole) << "split at " << cut << " of: " << text;
  }
  ChatOutputParser parser(format, tools, TurnStart::kOpen);
  Parsed p;
  for (char c : text) Add(p, parser.Feed(std::string(1, c)));
  Add(p, parser.Finish());
  EXPECT_EQ(p, whole) << "byte by byte: " << text;
}

ChatOutputFormat Format(ToolCallSyntax syntax, bool reasoning = false) {
  ChatOutputFormat f;
  f.tools = syntax;
  f.reasoning = reasoning;
  return f;
}

TEST(ChatOutputParser, HermesCallsAndContent) {
  const auto f = Format(ToolCallSyntax::kHermes, true);
  const std::string text =
      "<think>\nweather first\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";
  const Parsed p = Whole(f, text);
  EXPECT_EQ(p.reasoning, "\nweather first\n");
  EXPECT_EQ(p.content, "Let me check.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0], std::make_pair(std::string("get_weather"), std::string(R"({"city": "Paris"})"))) << "as the model wrote them";
  EXPECT_EQ(p.calls[1].first, "get_time");
  EXPECT_EQ(p.ended, 2);
  ExpectStreamsLikeWhole(f, text);
}

TEST(ChatOutputParser, WithoutToolsTheMarkersAreContent) {
  const auto f = Format(ToolCallSyntax::kHermes);
  const std::string text = "a <tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call> b";
  const Parsed p = Whole(f, text, /*tools=*/false);
  EXPECT_EQ(p.content, text);
  EXPECT_TRUE(p.calls.empty());
  ExpectStreamsLikeWhole(f, text, false);
}

TEST(ChatOutputParser, ABrokenCallComesBackAsContent) {
  const auto f = Format(ToolCallSyntax::kHermes);
  for (const std::string& text : {std::string("ok <tool_call>\n{\"name\": \"x\", \"argu"),  // cut off by max_tokens
                                 std::string("<tool_call>not json</tool_call>")}) {
    const Parsed p = Whole(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_NE(p.content.find("<tool_call>"), std::string::npos) << "nothing the model wrote is lost: " << text;
    ExpectStreamsLikeWhole(f, text);
  }
}

TEST(ChatOutputParser, ReasoningOnlyWhereTheTurnOpensIt) {
  const auto f = Format(ToolCallSyntax::kNone, true);
  EXPECT_EQ(Whole(f, "<think>a</think>\n\nb").reasoning, "a");
  EXPECT_EQ(Whole(f, "<think>a</think>\n\nb").content, "b");
  EXPECT_EQ(Whole(f, "plain <think>x</think>").content, "plain <think>x</think>");
  EXPECT_EQ(Whole(f, "<thi").content, "<thi");
  EXPECT_EQ(Whole(f, "<think>cut off").reasoning, "cut off");
  EXPECT_EQ(Whole(f, "still thinking</think>answer", true, TurnStart::kReasoning).reasoning, "still thinking");
  ExpectStreamsLikeWhole(f, "<think>\nhmm < / think\n</think>\n\nThe answer < 3.");
}

// The content says where in the turn's text it came from (for the log-probs of its tokens), fed whole or in pieces.
TEST(ChatOutputParser, ContentSaysWhereItCameFrom) {
  const auto f = Format(ToolCallSyntax::kHermes, true);
  const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  const std::string text = "<think>r</think>\n\nHi " + call + "\nok";
  const size_t hi = text.find("Hi");
  const size_t ok = text.rfind("ok");
  ChatOutputParser whole(f, true, TurnStart::kOpen);
  ChatOutputDelta d = whole.Feed(text);
  const ChatOutputDelta rest = whole.Finish();
  d.content_from.insert(d.content_from.end(), rest.content_from.begin(), rest.content_from.end());
  EXPECT_EQ(d.content_from, (std::vector<TextSpan>{{hi, hi + 2}, {ok, ok + 2}})) << "the call, the reasoning and the spaces are not content";
  ChatOutputParser bytewise(f, true, TurnStart::kOpen);
  std::vector<TextSpan> spans;
  for (char c : text) {
    for (const TextSpan& span : bytewise.Feed(std::string(1, c)).content_from) spans.push_back(span);
  }
  for (const TextSpan& span : bytewise.Finish().content_from) spans.push_back(span);
  std::string from_spans;
  for (const TextSpan& span : spans) from_spans += text.substr(span.begin, span.end - span.begin);
  EXPECT_EQ(from_spans, "Hiok");
}

// A prefill (continue_final_message) that wrote content or closed its reasoning continues the content: a <think>
// the model writes then is text, not reasoning.
TEST(ChatOutputParser, ATurnThatStartsInTheContentHasNoReasoning) {
  const auto f = Format(ToolCallSyntax::kHermes, true);
  const Parsed p = Whole(f, "<think>a</think>b", true, TurnStart::kContent);
  EXPECT_EQ(p.content, "<think>a</think>b");
  EXPECT_EQ(p.reasoning, "");
  const Parsed call = Whole(f, " red.<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", true, TurnStart::kContent);
  EXPECT_EQ(call.content, " red.") << "calls are still read";
  ASSERT_EQ(call.calls.size(), 1u);
}

TEST(ChatOutputParser, Llama3JsonCallsOpenTheTurn) {
  const auto f = Format(ToolCallSyntax::kLlama3Json);
  const std::string one = "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"a;b\"}}";
  Parsed p = Whole(f, one);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].second, R"({"city": "a;b"})");
  EXPECT_EQ(p.content, "");
  ExpectStreamsLikeWhole(f, one);
  const std::string two = " {\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": [1, {\"y\": \"}\"}]}}";
  p = Whole(f, two);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].first, "b");
  ExpectStreamsLikeWhole(f, two);
  EXPECT_EQ(Whole(f, "Hello {\"name\": 1}").content, "Hello {\"name\": 1}");
  EXPECT_EQ(Whole(f, "{not a call}").content, "{not a call}");
  ExpectStreamsLikeWhole(f, "Hello {\"name\": 1}");
}

TEST(ChatOutputParser, MistralCallList) {
  const auto f = Format(ToolCallSyntax::kMistral);
  const std::string text = "Sure.[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"k\": 1}}, {\"name\": \"b\", \"arguments\": \"{\\\"z\\\": 2}\"}]";
  const Parsed p = Whole(f, text);
  EXPECT_EQ(p.content, "Sure.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].second, R"({"k": 1})");
  EXPECT_EQ(p.calls[1].second, R"({"z":2})") << "arguments given as JSON text are read as JSON (that call comes whole)";
  ExpectStreamsLikeWhole(f, text);
  EXPECT_EQ(Whole(f, "[TOOL_CALLS][{\"name\": \"a\"").content, "[TOOL_CALLS][{\"name\": \"a\"");
}

// Mistral's v11+ tokenizers write each call [TOOL_CALLS]name[ARGS]{...}; the arguments stream, and the next call's
// [TOOL_CALLS] or the turn's end ends a call. [CALL_ID]id before [ARGS], and v11's first shape without [ARGS], are
// read too.
TEST(ChatOutputParser, MistralV11CallsOneMarkerEach) {
  const auto f = Format(ToolCallSyntax::kMistralV11);
  const std::string text = "Sure. [TOOL_CALLS]get_weather[ARGS]{\"city\": \"[TOOL_CALLS]\"}\n[TOOL_CALLS]get.time[CALL_ID]a1B2c3D4e[ARGS]"
                           "{\"tz\": {\"x\": [1]}}[TOOL_CALLS]ping{}";
  const Parsed p = Whole(f, text);
  EXPECT_EQ(p.content, "Sure.");
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"get_weather", R"({"city": "[TOOL_CALLS]"})"}, {"get.time", R"({"tz": {"x": [1]}})"}, {"ping", "{}"}};
  EXPECT_EQ(p.calls, calls);
  EXPECT_EQ(p.ended, 3);
  ExpectStreamsLikeWhole(f, text);

  ChatOutputParser parser(f, true, TurnStart::kOpen);
  EXPECT_TRUE(parser.Feed("[TOOL_CALLS]get_weather[AR").tool_calls.empty()) << "held while it may still be a head";
  ChatOutputDelta head = parser.Feed("GS]{\"ci");
  EXPECT_EQ(head.tool_calls, std::vector<ToolCallPiece>({{0, "get_weather", "{\"ci", false}})) << "the arguments stream";
  ChatOutputDelta closed = parser.Feed("ty\": 1}");
  EXPECT_EQ(closed.tool_calls, std::vector<ToolCallPiece>({{0, "", "ty\": 1}", false}})) << "another call may follow";
  EXPECT_EQ(parser.Finish().tool_calls, std::vector<ToolCallPiece>({{0, "", "", true}}));

  // Not a call: the text is content, nothing lost; text after a call that opens no other is content.
  for (const std::string bad : {"[TOOL_CALLS]get weather[ARGS]{}", "a[TOOL_CALLS][{\"name\": \"f\"}]", "[TOOL_CALLS]f[ARGS]\"x\"",
                                "[TOOL_CALLS]get_wea", "[TOOL_CALLS]f[ARGS]"}) {
    const Parsed q = Whole(f, bad);
    EXPECT_TRUE(q.calls.empty()) << bad;
    EXPECT_EQ(q.content, bad) << "nothing the model wrote is lost";
    ExpectStreamsLikeWhole(f, bad);
  }
  const std::string after = "[TOOL_CALLS]f[ARGS]{\"a\": 1} and [TOOL_CALLS]g[ARGS]{}";
  const Parsed q = Whole(f, after);
  EXPECT_EQ(q.content, "and");
  ASSERT_EQ(q.calls.size(), 2u);
  EXPECT_EQ(q.calls[1].first, "g");
  ExpectStreamsLikeWhole(f, after);
  const Parsed brace = Whole(f, "[TOOL_CALLS]f[ARGS]{\"a\": 1}}");
  EXPECT_EQ(brace.content, "}") << "the arguments are the whole call: a `}` after them is not the call's";
  const Parsed cut = Whole(f, "[TOOL_CALLS]f[ARGS]{\"a\": \"x");
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_EQ(cut.calls[0].second, "{\"a\": \"x") << "cut off inside its arguments: kept, never ended";
  EXPECT_EQ(cut.ended, 0);
}

// Magistral's reasoning block is [THINK]...[/THINK] (special tokens its template writes), before its answer and calls.
TEST(ChatOutputParser, MistralReasoningInBrackets) {
  auto f = Format(ToolCallSyntax::kMistralV11, true);
  f.think_open = kMistralThinkOpen;
  f.think_close = kMistralThinkClose;
  const std::string text = "[THINK]Paris, so <think> is text here.[/THINK]Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}";
  const Parsed p = Whole(f, text);
  EXPECT_EQ(p.reasoning, "Paris, so <think> is text here.");
  EXPECT_EQ(p.content, "Checking.");
  ASSERT_EQ(p.calls.size(), 1u);
  ExpectStreamsLikeWhole(f, text);
  EXPECT_EQ(Whole(f, "<think>a</think>b").content, "<think>a</think>b") << "the other syntax's markers are text";
  EXPECT_EQ(Whole(f, "more thought[/THINK]Done.", true, TurnStart::kReasoning).reasoning, "more thought");
}

// A call streams as the model writes it: its name once the head is complete, then its arguments piece by piece,
// before the call closes; in every JSON syntax.
TEST(ChatOutputParser, ACallStreamsAsItIsWritten) {
  struct Case {
    ToolCallSyntax syntax;
    std::string head, arguments, close;
  };
  for (const Case& c : {Case{ToolCallSyntax::kHermes, "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ",
                             "{\"city\": \"Pa;ris}\", \"days\": [1, {\"a\": null}]}", "}\n</tool_call>"},
                        Case{ToolCallSyntax::kLlama3Json, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": ",
                             "{\"city\": \"Pa;ris}\", \"days\": [1, {\"a\": null}]}", "}"},
                        Case{ToolCallSyntax::kMistral, "[TOOL_CALLS] [{\"name\":\"get_weather\",\"arguments\":",
                             "{\"city\": \"Pa;ris}\", \"days\": [1, {\"a\": null}]}", "}]"}}) {
    const std::string text = c.head + c.arguments + c.close;
    SCOPED_TRACE(text);
    ChatOutputParser parser(Format(c.syntax), true, TurnStart::kOpen);
    EXPECT_TRUE(parser.Feed(c.head).tool_calls.empty()) << "an object must follow for the call to stream";
    ChatOutputDelta head = parser.Feed("{");
    ASSERT_EQ(head.tool_calls.size(), 1u) << "the name comes with the arguments' first byte: " << c.head;
    EXPECT_EQ(head.tool_calls[0], (ToolCallPiece{0, "get_weather", "{", false}));
    const size_t half = c.arguments.size() / 2;
    ChatOutputDelta first = parser.Feed(c.arguments.substr(1, half - 1));
    ASSERT_EQ(first.tool_calls.size(), 1u);
    EXPECT_EQ(first.tool_calls[0], (ToolCallPiece{0, "", c.arguments.substr(1, half - 1), false})) << "arguments as they come";
    ChatOutputDelta rest = parser.Feed(c.arguments.substr(half) + c.close);
    ASSERT_EQ(rest.tool_calls.size(), 1u);
    // The call ends with its close; a Llama 3 call, which a `;` and another may follow, with the turn.
    const bool llama = c.syntax == ToolCallSyntax::kLlama3Json;
    EXPECT_EQ(rest.tool_calls[0], (ToolCallPiece{0, "", c.arguments.substr(half), !llama}));
    const ChatOutputDelta end = parser.Finish();
    const std::vector<ToolCallPiece> ends_now = {{0, "", "", true}};
    EXPECT_EQ(end.tool_calls, llama ? ends_now : std::vector<ToolCallPiece>());
    EXPECT_EQ(end.content, "");
    const Parsed whole = Whole(Format(c.syntax), text);
    ASSERT_EQ(whole.calls.size(), 1u);
    EXPECT_EQ(whole.calls[0].second, c.arguments);
    ExpectStreamsLikeWhole(Format(c.syntax), text);
  }
}

// A call cut off inside its arguments (max_tokens) keeps what was written, and never ends; text after a streamed
// call's arguments that does not close it is content.
TEST(ChatOutputParser, ACallCutOffKeepsItsArgumentsAndTextAfterACallIsKept) {
  const auto hermes = Format(ToolCallSyntax::kHermes);
  const std::string cut = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x}";
  Parsed p = Whole(hermes, cut);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].second, "{\"a\": \"x}");
  EXPECT_EQ(p.ended, 0);
  EXPECT_EQ(p.content, "");
  ExpectStreamsLikeWhole(hermes, cut);
  for (const std::string tail : {" oops", ", \"x\": 1}</tool_call>"}) {
    const std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {}}" + tail;
    p = Whole(hermes, text);
    ASSERT_EQ(p.calls.size(), 1u) << text;
    EXPECT_EQ(p.ended, 1);
    EXPECT_EQ(p.content, std::string(absl::StripLeadingAsciiWhitespace(tail))) << "nothing the model wrote is lost";
    ExpectStreamsLikeWhole(hermes, text);
  }
  const auto llama = Format(ToolCallSyntax::kLlama3Json);
  p = Whole(llama, "{\"name\": \"f\", \"parameters\": {\"a\": 1}} and more");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "and more");
}

// A call of another shape (keys in another order, arguments as JSON text) comes whole when complete, its arguments'
// keys in the model's order.
TEST(ChatOutputParser, ACallOfAnotherShapeComesWhole) {
  const auto f = Format(ToolCallSyntax::kHermes);
  const std::string text = "<tool_call>{\"arguments\": {\"b\": 1, \"a\": [2]}, \"name\": \"f\"}</tool_call>";
  ChatOutputParser parser(f, true, TurnStart::kOpen);
  EXPECT_TRUE(parser.Feed(text.substr(0, text.size() - 3)).tool_calls.empty()) << "held until the call is complete";
  const ChatOutputDelta done = parser.Feed(text.substr(text.size() - 3));
  ASSERT_EQ(done.tool_calls.size(), 1u);
  EXPECT_EQ(done.tool_calls[0], (ToolCallPiece{0, "f", R"({"b":1,"a":[2]})", true}));
  ExpectStreamsLikeWhole(f, text);
  const auto mistral = Format(ToolCallSyntax::kMistral);
  const std::string second = "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"arguments\": {\"k\": \"v\"}, \"name\": \"b\"}]";
  const Parsed p = Whole(mistral, second);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1], std::make_pair(std::string("b"), std::string(R"({"k":"v"})")));
  EXPECT_EQ(p.ended, 2);
  ExpectStreamsLikeWhole(mistral, second);
}

TEST(ChatOutputParser, PythonicCallListOpensTheTurn) {
  const auto f = Format(ToolCallSyntax::kPythonic);
  const std::string two = " [get_weather(city='Paris', days=3), get_time()]\n";
  Parsed p = Whole(f, two);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0], std::make_pair(std::string("get_weather"), std::string(R"({"city":"Paris","days":3})")));
  EXPECT_EQ(p.calls[1], std::make_pair(std::string("get_time"), std::string("{}")));
  EXPECT_EQ(p.content, "");
  ExpectStreamsLikeWhole(f, two);
  // Not a list of calls: content, whole, never lost.
  for (const std::string text : {"[1] is a citation", "Hello [f(a=1)]", "[f(1)]", "[f(a=1", "[]", "[f(a=b)]"}) {
    p = Whole(f, text);
    EXPECT_EQ(p.content, text) << text;
    EXPECT_TRUE(p.calls.empty()) << text;
    ExpectStreamsLikeWhole(f, text);
  }
  EXPECT_EQ(Whole(f, "[f(a=1)]", /*tools=*/false).content, "[f(a=1)]") << "a request without tools reads no calls";
  ChatOutputParser streamed(f, true, TurnStart::kOpen);
  EXPECT_EQ(streamed.Feed(" [").content, "") << "may still open a list of calls";
  EXPECT_EQ(streamed.Feed("1] is").content, " [1] is") << "a bracket no name follows is content at once, not held to the end";
}

// Each call of a pythonic list comes whole as soon as its `)` is written, not with the end of the turn; a call that
// cannot be read, or one cut off, leaves the calls before it and is content from there (nothing lost), as is text after
// the list.
TEST(ChatOutputParser, PythonicCallsComeOneByOneAsTheyClose) {
  const auto f = Format(ToolCallSyntax::kPythonic);
  ChatOutputParser parser(f, true, TurnStart::kOpen);
  Parsed p;
  Add(p, parser.Feed("[get_weather(city='Par"));
  EXPECT_TRUE(p.calls.empty());
  Add(p, parser.Feed("is, (France)', days=3"));
  EXPECT_TRUE(p.calls.empty()) << "the call is not closed yet";
  Add(p, parser.Feed("), get_ti"));
  ASSERT_EQ(p.calls.size(), 1u) << "the first call, before the list closes";
  EXPECT_EQ(p.calls[0], std::make_pair(std::string("get_weather"), std::string(R"j({"city":"Paris, (France)","days":3})j")));
  EXPECT_EQ(p.ended, 1);
  Add(p, parser.Feed("me(tz=\"C)\")]"));
  Add(p, parser.Finish());
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1], std::make_pair(std::string("get_time"), std::string(R"j({"tz":"C)"})j")));
  EXPECT_EQ(p.content, "");

  struct Case {
    std::string text;
    std::vector<std::string> names;
    std::string content;
  };
  for (const Case& c : std::vector<Case>{
           {"[f(a=1)", {"f"}, ""},                                 // cut off before the list's `]`
           {"[f(a=1), g(b=", {"f"}, ", g(b="},                     // cut off inside the second call
           {"[f(a=1), g(b=x)]", {"f"}, ", g(b=x)]"},               // a name where a literal must be
           {"[f(a=1) g()]", {"f"}, "g()]"},                         // no separator
           {"[f(a=1), g()] That is all.", {"f", "g"}, "That is all."},
           {"[f(s='[1, 2]', t=(1, 2), u={'k': [None]})]", {"f"}, ""},
       }) {
    p = Whole(f, c.text);
    std::vector<std::string> names;
    for (const auto& call : p.calls) names.push_back(call.first);
    EXPECT_EQ(names, c.names) << c.text;
    EXPECT_EQ(p.content, c.content) << c.text;
    EXPECT_EQ(p.ended, static_cast<int>(p.calls.size())) << c.text;
    ExpectStreamsLikeWhole(f, c.text);
  }
}

TEST(Tools, ParseToolsAndToolChoiceNameTheField) {
  using json = nlohmann::json;
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
                                      {"type": "function", "function": {"name": "noop"}}])");
  auto specs = ParseTools(tools, "tools");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[1].parameters, json::parse(R"({"type": "object", "properties": {}})"));
  EXPECT_EQ(ParseTools(json::parse(R"([{"type": "code_interpreter"}])"), "tools").status().message(),
            "tools[0].type: 'code_interpreter' is not supported (function tools only)");
  EXPECT_EQ(ParseTools(json::parse(R"([{"type": "function", "function": {"name": "a b"}}])"), "tools").status().message(),
            "tools[0].function.name: is required: 1 to 64 letters, digits, underscores or dashes");
  // A call's arguments are an object: a schema of another type is refused (the constrained call would never parse
  // as one and came back as content), one without a type is held to objects.
  EXPECT_EQ(ParseTools(json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}])"), "tools")
                .status().message(),
            "tools[0].function.parameters.type: must be \"object\" (a call's arguments are a JSON object)");
  auto untyped = ParseTools(json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": {}}}}}])"), "tools");
  ASSERT_TRUE(untyped.ok()) << untyped.status();
  EXPECT_EQ((*untyped)[0].parameters, json::parse(R"({"type": "object", "properties": {"a": {}}})"));
  EXPECT_EQ(ParseToolChoice(json(), *specs, "tool_choice")->mode, ToolChoice::Mode::kAuto);
  EXPECT_EQ(ParseToolChoice(json(), {}, "tool_choice")->mode, ToolChoice::Mode::kNone);
  EXPECT_EQ(ParseToolChoice("required", *specs, "tool_choice")->mode, ToolChoice::Mode::kRequired);
  auto named = ParseToolChoice(json::parse(R"({"type": "function", "function": {"name": "noop"}})"), *specs, "tool_choice");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->name, "noop");
  EXPECT_EQ(ParseToolChoice(json::parse(R"({"type": "function", "function": {"name": "other"}})"), *specs, "tool_choice").status().message(),
            "tool_choice.function.name: 'other' is not one of the tools");
  EXPECT_EQ(ParseToolChoice("required", {}, "tool_choice").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseToolChoice("sometimes", *specs, "tool_choice").status().code(), absl::StatusCode::kInvalidArgument);
}

// The Responses API writes a function tool's fields flat: they are read alike and named where the caller wrote them.
TEST(Tools, FlatShapeIsReadAlikeAndNamedAsWritten) {
  using json = nlohmann::json;
  const json nested = json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": {}}}}}])");
  const json flat = json::parse(R"([{"type": "function", "name": "f", "parameters": {"properties": {"a": {}}}}])");
  auto from_nested = ParseTools(nested, "tools");
  auto from_flat = ParseTools(flat, "tools", ToolShape::kFlat);
  ASSERT_TRUE(from_nested.ok()) << from_nested.status();
  ASSERT_TRUE(from_flat.ok()) << from_flat.status();
  ASSERT_EQ(from_flat->size(), 1u);
  EXPECT_EQ((*from_flat)[0].name, (*from_nested)[0].name);
  EXPECT_EQ((*from_flat)[0].parameters, (*from_nested)[0].parameters);
  EXPECT_EQ(ParseTools(nested, "tools", ToolShape::kFlat).status().message(),
            "tools[0].name: is required: 1 to 64 letters, digits, underscores or dashes")
      << "a nested tool is not a flat one";
  EXPECT_EQ(ParseTools(flat, "tools").status().message(), "tools[0].function: is required (an object)");
  EXPECT_EQ(ParseTools(json::parse(R"([{"type": "function", "name": "f", "parameters": {"type": "array"}}])"), "tools", ToolShape::kFlat)
                .status().message(),
            "tools[0].parameters.type: must be \"object\" (a call's arguments are a JSON object)");
  EXPECT_EQ(ParseTools(json::parse(R"([{"type": "function", "name": "f"}, {"type": "function", "name": "f"}])"), "tools", ToolShape::kFlat)
                .status().message(),
            "tools[1].name: 'f' is given twice");
  EXPECT_EQ(ParseTools(json::parse(R"([{"type": "function", "name": "f", "strict": "yes"}])"), "tools", ToolShape::kFlat).status().message(),
            "tools[0].strict: must be true or false");

  auto named = ParseToolChoice(json::parse(R"({"type": "function", "name": "f"})"), *from_flat, "tool_choice", ToolShape::kFlat);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->mode, ToolChoice::Mode::kNamed);
  EXPECT_EQ(named->name, "f");
  EXPECT_EQ(ParseToolChoice(json::parse(R"({"type": "function", "name": "g"})"), *from_flat, "tool_choice", ToolShape::kFlat)
                .status().message(),
            "tool_choice.name: 'g' is not one of the tools");
  EXPECT_EQ(ParseToolChoice(json::parse(R"({"type": "function", "function": {"name": "f"}})"), *from_flat, "tool_choice", ToolShape::kFlat)
                .status().message(),
            "tool_choice.name: is required (a string)");
  EXPECT_EQ(ParseToolChoice(json::parse(R"({"type": "function", "name": "f"})"), *from_flat, "tool_choice").status().message(),
            "tool_choice.function: is required: {\"type\": \"function\", \"function\": {\"name\": ...}}");
  EXPECT_EQ(ParseToolChoice(json::parse(R"({"type": "allowed_tools"})"), *from_flat, "tool_choice", ToolShape::kFlat).status().message(),
            "tool_choice.type: must be \"function\" (or tool_choice auto, none or required): {\"type\": \"function\", \"name\": ...}");
}

// Call ids in the form the model's template takes back: Mistral's templates refuse any id but 9 letters or digits.
TEST(Tools, CallIdsHaveTheFormTheTemplateTakes) {
  std::set<std::string> ids;
  for (ToolCallSyntax syntax : {ToolCallSyntax::kMistral, ToolCallSyntax::kMistralV11, ToolCallSyntax::kHermes}) {
    const bool mistral = syntax != ToolCallSyntax::kHermes;
    for (int i = 0; i < 20; ++i) {
      const std::string id = NewToolCallId(syntax);
      ids.insert(id);
      const absl::string_view digits = mistral ? absl::string_view(id) : absl::StripPrefix(id, "call_");
      EXPECT_EQ(digits.size(), mistral ? 9u : 24u) << id;
      EXPECT_EQ(mistral, !absl::StartsWith(id, "call_")) << id;
      for (char c : digits) EXPECT_TRUE(mistral ? absl::ascii_isalnum(c) : absl::ascii_isxdigit(c) && !absl::ascii_isupper(c)) << id;
    }
  }
  EXPECT_EQ(ids.size(), 60u) << "random";
}

TEST(ChatOutputFormat, ChosenFromTheTemplateOrTheFlags) {
  EXPECT_EQ(ChatOutputFormatOfTemplate("{{ '<tool_call>' }}").tools, ToolCallSyntax::kHermes);
  EXPECT_EQ(ChatOutputFormatOfTemplate("[TOOL_CALLS]").tools, ToolCallSyntax::kMistral);
  EXPECT_EQ(ChatOutputFormatOfTemplate("{{ '[TOOL_CALLS]' + name + '[ARGS]' + arguments }}").tools, ToolCallSyntax::kMistralV11);
  EXPECT_EQ(ChatOutputFormatOfTemplate("<|python_tag|>").tools, ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(ChatOutputFormatOfTemplate("plain").tools, ToolCallSyntax::kNone);
  // vLLM's Llama 3.2 pythonic template (it also says ipython, as Llama 3's JSON templates do)
  EXPECT_EQ(ChatOutputFormatOfTemplate("Environment: ipython\n{{- 'Respond in the format [func_name1(params_name1=params_value1, "
                                       "params_name2=params_value2...), func_name2(params)] ' }}")
                .tools,
            ToolCallSyntax::kPythonic);
  EXPECT_TRUE(ChatOutputFormatOfTemplate("<think></think>").reasoning);
  EXPECT_STREQ(ChatOutputFormatOfTemplate("<think></think>").ReasoningName(), "qwen3");
  const ChatOutputFormat magistral = ChatOutputFormatOfTemplate("{{ '[THINK]' + thinking + '[/THINK]' }}");
  EXPECT_STREQ(magistral.ReasoningName(), "mistral");
  EXPECT_EQ(magistral.think_open, "[THINK]");
  EXPECT_EQ(magistral.think_close, "[/THINK]");
  EXPECT_STREQ(ChatOutputFormatOfTemplate("plain").ReasoningName(), "none");
  EXPECT_EQ(ResolveChatOutputFormat("<think></think>", "auto", "mistral")->think_close, "[/THINK]");
  EXPECT_EQ(ResolveChatOutputFormat("", "auto", "deepseek").status().message(),
            "--reasoning_parser: 'deepseek' is not auto, qwen3, mistral or none");
  auto f = ResolveChatOutputFormat("<tool_call>", "mistral", "none");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tools, ToolCallSyntax::kMistral);
  EXPECT_EQ(ResolveChatOutputFormat("", "xml", "auto").status().message(),
            "--tool_call_parser: 'xml' is not auto, hermes, llama3_json, mistral, mistral_v11, pythonic or none");
  EXPECT_EQ(ResolveChatOutputFormat("", "pythonic", "auto")->tools, ToolCallSyntax::kPythonic);
}

}  // namespace
}  // namespace arach::server
