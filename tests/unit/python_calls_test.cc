// The pythonic tool-call syntax (server/chat_output/python_calls.h): Python call lists read into JSON arguments
// as Python's ast.literal_eval then json.dumps would read them, and the grammars that constrain them.
#include "server/chat_output/python_calls.h"

#include "gtest/gtest.h"
#include "server/chat_output/python_call_grammar.h"
#include "nlohmann/json.hpp"

namespace arach::server {
namespace {

using json = nlohmann::json;

// The one call of `text`, its arguments as JSON; null when `text` is not a list of calls.
json ArgumentsOf(const std::string& text) {
  const std::optional<std::vector<ParsedToolCall>> calls = ParsePythonCalls(text);
  if (!calls) return nullptr;
  EXPECT_EQ(calls->size(), 1u) << text;
  return json::parse(calls->front().arguments);
}

TEST(PythonCalls, ReadsCallsWithLiteralArguments) {
  const std::optional<std::vector<ParsedToolCall>> calls =
      ParsePythonCalls("[get_weather(city='San Francisco', unit=\"celsius\"),\n  get_time(), add(a=1, b=-2.5,)]");
  ASSERT_TRUE(calls.has_value());
  ASSERT_EQ(calls->size(), 3u);
  EXPECT_EQ((*calls)[0].name, "get_weather");
  EXPECT_EQ(json::parse((*calls)[0].arguments), json::parse(R"({"city": "San Francisco", "unit": "celsius"})"));
  EXPECT_EQ((*calls)[1].arguments, "{}");
  EXPECT_EQ(json::parse((*calls)[2].arguments), json::parse(R"({"a": 1, "b": -2.5})"));
}

TEST(PythonCalls, LiteralsConvertAsJsonDumpsWritesThem) {
  EXPECT_EQ(ArgumentsOf("[f(t=True, f=False, n=None)]"), json::parse(R"({"t": true, "f": false, "n": null})"));
  EXPECT_EQ(ArgumentsOf("[f(x=[1, (2, 3), (4,), (5)], d={'k': {'n': []}, 1: 'one'})]"),
            json::parse(R"({"x": [1, [2, 3], [4], 5], "d": {"k": {"n": []}, "1": "one"}})"));
  EXPECT_EQ(ArgumentsOf("[f(a=1_000, b=.5, c=5., d=1e3, e=-0, g=+7, h=123456789012345678901234)]"),
            json::parse(R"({"a": 1000, "b": 0.5, "c": 5.0, "d": 1000.0, "e": 0, "g": 7, "h": 1.2345678901234568e23})"));
  EXPECT_EQ(ArgumentsOf(R"([f(s='it\'s "q"\n\t\\ \x41\u00e9\U0001F600\101\d', t="""tri
ple""", u='''x'y''')])"),
            json({{"s", "it's \"q\"\n\t\\ A\u00e9\U0001F600A\\d"}, {"t", "tri\nple"}, {"u", "x'y"}}));
  EXPECT_EQ(ArgumentsOf("[f(s='caf\xc3\xa9')]")["s"], "caf\xc3\xa9") << "UTF-8 text as written";
}

TEST(PythonCalls, RefusesWhatIsNotAListOfLiteralCalls) {
  for (const char* text : {"", "[]", "f(a=1)", "[f(a=1)] and more", "[f(a=1) g(b=2)]", "[f(1)]", "[f(a=b)]", "[f(a=g())]",
                           "[f(a=1, a=2)]", "[f(a==1)]", "[f(a='x\ny')]", "[f(a='open)]", "[f(a=0x1F)]", "[f(a=1j)]",
                           "[f(a={1, 2})]", "[f(a={[1]: 2})]", "[f(a='\\ud800')]", "[f(a='\\xZZ')]", "[f(a=-)]", "[f(a=.)]",
                           "[f(a=[1 2])]", "[1, 2]", "[f.g(a=1)]", "[f(a=1]", "[f(a=1)"}) {
    EXPECT_FALSE(ParsePythonCalls(text).has_value()) << text;
  }
  std::string deep = "[f(a=" + std::string(200, '[') + std::string(200, ']') + ")]";
  EXPECT_FALSE(ParsePythonCalls(deep).has_value()) << "nesting beyond the bound is refused, not recursed into";
}

// ReadPythonCall, as a streamed list arrives: every prefix of a call short of its `)` needs more text, the call is
// read at its `)` (its length through it) and alike with any text after it; a text that is no call is told so as soon
// as it cannot become one, and a prefix of it never reads as a call.
TEST(PythonCalls, OneCallReadsAsItStreams) {
  for (const std::string call : {"get_weather(city='Pa)ris', days=3)", " f()", "f(s=\"\"\"a)\n)\"\"\", t=(1, [2, {'k': -1.5e3}]), u=None)",
                                 "f(a='\\')')"}) {
    for (size_t cut = 0; cut < call.size(); ++cut) {
      EXPECT_EQ(ReadPythonCall(call.substr(0, cut)).result, PythonCallRead::Result::kIncomplete) << call.substr(0, cut);
    }
    for (const std::string after : {"", "]", ", g(", " junk"}) {
      const PythonCallRead read = ReadPythonCall(call + after);
      ASSERT_EQ(read.result, PythonCallRead::Result::kCall) << call + after;
      EXPECT_EQ(read.length, call.size()) << call + after;
      EXPECT_EQ(read.call.name, call.substr(call.find_first_not_of(' '), call.find('(') - call.find_first_not_of(' ')));
    }
  }
  EXPECT_EQ(ReadPythonCall("f(s='x', n=1)").call.arguments, R"({"s":"x","n":1})") << "in the order written";
  for (const std::string text : {"f(1)", "1", "f(a=b)", "f(a==1)", "f.g()", "f(a='x\ny')", "f(a=0x1)", "f(a=[1 2])"}) {
    EXPECT_EQ(ReadPythonCall(text).result, PythonCallRead::Result::kInvalid) << text;
    for (size_t cut = 0; cut <= text.size(); ++cut) {
      EXPECT_NE(ReadPythonCall(text.substr(0, cut)).result, PythonCallRead::Result::kCall) << text.substr(0, cut);
    }
  }
}

TEST(PythonCalls, IdentifiersAreWhatPythonNamesAre) {
  EXPECT_TRUE(IsPythonIdentifier("get_weather2"));
  EXPECT_TRUE(IsPythonIdentifier("_x"));
  EXPECT_FALSE(IsPythonIdentifier("get-weather"));
  EXPECT_FALSE(IsPythonIdentifier("2x"));
  EXPECT_FALSE(IsPythonIdentifier(""));
}

TEST(PythonCalls, TheGrammarWritesEachPropertyByItsSchema) {
  const ToolSpec weather = {"get_weather", json::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
      "unit": {"type": "string", "enum": ["celsius", "it's"]}, "days": {"type": ["integer", "null"]}}, "required": ["city"]})")};
  const std::string grammar = PythonArgumentsGrammar(weather);
  EXPECT_NE(grammar.find("root ::= args\n"), std::string::npos) << grammar;
  EXPECT_NE(grammar.find(R"g(first_0 ::= "city=" py_string rest_1)g" "\n"), std::string::npos) << "required: no alternative without it\n" << grammar;
  EXPECT_NE(grammar.find(R"g(rest_1 ::= ", " "days=" (py_int | "None") rest_2 | rest_2)g"), std::string::npos) << grammar;
  EXPECT_NE(grammar.find(R"g(rest_2 ::= ", " "unit=" ("'celsius'" | "'it\\'s'") rest_3 | rest_3)g"), std::string::npos) << grammar;
  const std::string any = PythonArgumentsGrammar({"noop", json::parse(R"({"type": "object"})")});
  EXPECT_NE(any.find(R"g(args ::= "" | py_keyword (", " py_keyword)*)g"), std::string::npos) << "no properties: any keywords";
}

}  // namespace
}  // namespace arach::server
