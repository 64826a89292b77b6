// The Jinja engine construct by construct: every template of tests/jinja_oracle/cases.json (text, whitespace
// control, if/for/loop/set/namespace/macro, expressions, every test and filter, string and dict methods,
// globals) renders to the text Jinja2 gives; templates that raise give the template's message; failing ones
// fail with a line and column. Then what must be refused when a template loads, and the bounds that keep any
// template from hanging the server.
#include <fstream>
#include <sstream>

#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_interpreter.h"
#include "engine/chat/jinja_parser.h"
#include "engine/chat/jinja_value.h"
#include "gtest/gtest.h"
#include "tests/testing/build_paths.h"

namespace arach::jinja {
namespace {

using ordered_json = nlohmann::ordered_json;

absl::StatusOr<std::string> RenderText(const std::string& source, const ordered_json& variables = ordered_json::object()) {
  auto tmpl = ChatTemplate::Parse(source, TokenizerConfig{}, "test");
  if (!tmpl.ok()) return tmpl.status();
  absl::StatusOr<Template> tree = ParseTemplate(source);
  if (!tree.ok()) return tree.status();
  Dict vars;
  for (const auto& [key, value] : variables.items()) vars.Set(key, *Value::FromJson(value));
  vars.Set("raise_exception", Value::MakeFunction("raise_exception", [](CallArgs& a) -> absl::StatusOr<Value> {
    absl::Status raised = absl::InvalidArgumentError(a.positional.empty() ? "" : a.positional[0].Str());
    raised.SetPayload(kRaisedByTemplate, absl::Cord("1"));
    return raised;
  }));
  return Render(*tree, vars);
}

TEST(Jinja, EveryOracleCaseMatchesJinja2) {
  std::ifstream in(std::string(testing::SourceDir()) + "/tests/jinja_oracle/cases.json");
  ASSERT_TRUE(in) << "tests/jinja_oracle/cases.json";
  std::stringstream text;
  text << in.rdbuf();
  const ordered_json fixture = ordered_json::parse(text.str());
  int checked = 0;
  for (const ordered_json& c : fixture["cases"]) {
    const std::string source = c["template"];
    const absl::StatusOr<std::string> rendered = RenderText(source, fixture["variables"]);
    if (c.contains("text")) {
      ASSERT_TRUE(rendered.ok()) << source << "\n" << rendered.status();
      EXPECT_EQ(*rendered, c["text"].get<std::string>()) << source;
    } else if (c.contains("raises")) {
      ASSERT_FALSE(rendered.ok()) << source;
      EXPECT_EQ(rendered.status().message(), c["raises"].get<std::string>()) << "the template's own message, as is";
    } else {
      ASSERT_FALSE(rendered.ok()) << source << " should fail, rendered: " << *rendered;
      EXPECT_NE(rendered.status().message().find("line 1, column"), std::string::npos) << rendered.status();
    }
    ++checked;
  }
  EXPECT_GE(checked, 75);
}

TEST(Jinja, FloatsPrintAsPythonReprs) {
  EXPECT_EQ(FloatRepr(1.0), "1.0");
  EXPECT_EQ(FloatRepr(0.1), "0.1");
  EXPECT_EQ(FloatRepr(1e16), "1e+16");
  EXPECT_EQ(FloatRepr(1e-5), "1e-05");
  EXPECT_EQ(FloatRepr(0.0001), "0.0001");
  EXPECT_EQ(FloatRepr(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(FloatRepr(-2.5), "-2.5");
  EXPECT_EQ(FloatRepr(1234.5), "1234.5");
}

TEST(Jinja, ToJsonIsPythonJsonDumps) {
  const Value v = *Value::FromJson(ordered_json::parse(R"({"z": [1, 2.0, null, true], "a": "é\"\n\u0001", "e": {}, "l": []})"));
  EXPECT_EQ(*ToJson(v), R"({"z": [1, 2.0, null, true], "a": "é\"\n\u0001", "e": {}, "l": []})");
  JsonOptions indented;
  indented.indent = "  ";
  EXPECT_EQ(*ToJson(*Value::FromJson(ordered_json::parse(R"({"a": [1], "b": {}})")), indented), "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}");
  EXPECT_FALSE(ToJson(Value::Undefined()).ok());
}

std::string ParseError(const std::string& source) {
  absl::StatusOr<Template> tree = ParseTemplate(source);
  return tree.ok() ? "<parsed>" : std::string(tree.status().message());
}

TEST(Jinja, UnsupportedConstructsAreRefusedAtLoadNamingLineAndColumn) {
  EXPECT_EQ(ParseError("a\n  {% include 'x.j2' %}"), "line 2, column 6: unsupported tag 'include'");
  EXPECT_EQ(ParseError("{% block title %}x{% endblock %}"), "line 1, column 4: unsupported tag 'block'");
  EXPECT_EQ(ParseError("{% call x %}y{% endcall %}"), "line 1, column 9: a call block needs a call (macro(args))");
  EXPECT_EQ(ParseError("a\n{% raw %}{{ x }}"), "line 2, column 1: {% raw %} is never closed with {% endraw %}");
  EXPECT_EQ(ParseError("{{ '\\N{BULLET}' }}"),
            "line 1, column 5: \\N{...} escapes (Unicode character names) are not supported: write the character or \\u");
  EXPECT_EQ(ParseError("{% for x in y %}{% filter upper %}{% break %}{% endfilter %}{% endfor %}"),
            "line 1, column 38: 'break' outside a for loop");
  EXPECT_EQ(ParseError("{% extends 'base' %}"), "line 1, column 4: unsupported tag 'extends'");
  EXPECT_EQ(ParseError("{{ x | wordwrap }}"), "line 1, column 8: unsupported filter 'wordwrap'");
  EXPECT_EQ(ParseError("{% if x is prime %}{% endif %}"), "line 1, column 12: unsupported test 'prime'");
  EXPECT_EQ(ParseError("{{ f(**a, **b) }}"), "line 1, column 11: a second **kwargs");
  EXPECT_EQ(ParseError("{{ f(*a, 1) }}"), "line 1, column 10: a positional argument follows a keyword argument, *args or **kwargs");
  EXPECT_EQ(ParseError("{% set x | upper %}y{% endset %}"), "line 1, column 10: unsupported: filters on a block set");
  EXPECT_EQ(ParseError("{% if x %}no end"), "line 1, column 17: the template ends before {% elif %}");
  EXPECT_EQ(ParseError("{{ 'open }}"), "line 1, column 4: the string is never closed");
  EXPECT_EQ(ParseError("{{ x "), "line 1, column 6: the expression is never closed with }}");
  EXPECT_EQ(ParseError("{# never closed"), "line 1, column 1: the comment is never closed with #}");
  EXPECT_EQ(ParseError("{% break %}"), "line 1, column 4: 'break' outside a for loop");
  EXPECT_EQ(ParseError("{{ a ! b }}"), "line 1, column 6: unexpected character '!'");
  EXPECT_EQ(ParseError("{{ loop.99999999999999999999 }}"), "line 1, column 9: the index 99999999999999999999 is out of range");
  EXPECT_EQ(ParseError("{{ 99999999999999999999 }}"), "line 1, column 4: the integer 99999999999999999999 is out of range");
  auto t = ChatTemplate::Parse("{{ x | wordwrap }}", TokenizerConfig{}, "tokenizer_config.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "tokenizer_config.json: chat template: line 1, column 8: unsupported filter 'wordwrap'");
}

// What Jinja2 would print and our engine cannot is an error naming it, never a different text.
TEST(Jinja, WhatWeCannotRenderAsJinja2IsRefusedByName) {
  for (const char* source : {"{{ '{:>4}'.format(1) }}", "{{ '{x.y}'.format(x=1) }}", "{{ '{0[1]}'.format(l) }}", "{{ '{!a}'.format(1) }}",
                             "{{ 'a\\nb' | indent(300) }}", "{{ [1] | tojson(indent=65) }}", "{{ 1.5 | round(-1) }}"}) {
    const absl::StatusOr<std::string> rendered = RenderText(source);
    ASSERT_FALSE(rendered.ok()) << source << " rendered " << *rendered;
    EXPECT_NE(rendered.status().message().find("is not supported"), std::string::npos) << rendered.status();
  }
  EXPECT_EQ(*RenderText("{{ '{} {{}} {!r}'.format(1, 'x') }}"), "1 {} 'x'");
}

// xmlattr refuses an attribute name that would break the markup, as Jinja2 3.1.3 and later raise (3.1.2, the
// oracle's version, wrote it).
TEST(Jinja, XmlAttrRefusesNamesThatBreakTheMarkup) {
  for (const char* key : {"a b", "a/b", "a>b", "a=b", "a\tb"}) {
    const absl::StatusOr<std::string> rendered = RenderText("<p{{ {key: 1} | xmlattr }}>", ordered_json{{"key", key}});
    ASSERT_FALSE(rendered.ok()) << key << " rendered " << *rendered;
    EXPECT_NE(rendered.status().message().find("invalid character in attribute name"), std::string::npos) << rendered.status();
  }
  EXPECT_EQ(*RenderText("<p{{ {key: 1} | xmlattr }}>", ordered_json{{"key", "data-é_x:y"}}), "<p data-é_x:y=\"1\">");
}

TEST(Jinja, RenderingIsBounded) {
  const absl::StatusOr<std::string> recursion = RenderText("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(recursion.ok());
  EXPECT_NE(recursion.status().message().find("too deeply"), std::string::npos) << recursion.status();
  const absl::StatusOr<std::string> huge = RenderText("{{ range(100000000) | length }}");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("range is too long"), std::string::npos);
  const absl::StatusOr<std::string> nested =
      RenderText("{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}x{% endfor %}{% endfor %}{% endfor %}");
  ASSERT_FALSE(nested.ok());
  const absl::StatusOr<std::string> repeat = RenderText("{{ 'x' * 100000000 }}");
  ASSERT_FALSE(repeat.ok());
}

// Under AddressSanitizer (scripts/sanitize.sh asan) a reference cycle left behind is reported as a leak.
TEST(Jinja, SelfReferencesLeaveNoCycleBehind) {
  EXPECT_EQ(*RenderText("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{% set ns.list = [ns, ns] %}{{ ns.me.a }}"), "1");
  EXPECT_EQ(*RenderText("{% macro twice(x) %}{{ x }}{{ x }}{% endmacro %}{% set ns = namespace(m=twice) %}{{ ns.m(2) }}"), "22");
  EXPECT_FALSE(RenderText("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.missing.x }}").ok());
  // A namespace that holds itself prints, compares and fails tojson without exhausting the stack.
  EXPECT_TRUE(RenderText("{% set ns = namespace(n=0) %}{% set ns.n = ns %}{{ ns }}{{ ns == ns }}").ok());
  EXPECT_FALSE(RenderText("{% set ns = namespace(n=0) %}{% set ns.n = [ns] %}{{ ns.n | tojson }}").ok());
  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += "[";
  deep += "1";
  for (int i = 0; i < 1000; ++i) deep += "]";
  EXPECT_FALSE(Value::FromJson(ordered_json::parse(deep)).ok()) << "deeply nested input is refused";
}

TEST(ChatTemplate, VariablesAndRaisedErrors) {
  TokenizerConfig tokens;
  tokens.bos_token = "<s>";
  tokens.eos_token = "</s>";
  auto t = ChatTemplate::Parse(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}"
      "{% if add_generation_prompt %}[assistant]{% endif %}{% if tools %}{{ tools | tojson }}{% endif %}"
      "{% if enable_thinking is defined %}think={{ enable_thinking }}{% endif %}{{ pad_token is defined }}",
      tokens, "t");
  ASSERT_TRUE(t.ok()) << t.status();
  ChatInput input;
  input.messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(*(*t)->Render(input), "<s>[user]hi</s>[assistant]False");
  input.add_generation_prompt = false;
  input.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  input.extra = ordered_json::parse(R"({"enable_thinking": false})");
  EXPECT_EQ(*(*t)->Render(input), R"(<s>[user]hi</s>[{"type": "function", "function": {"name": "f"}}]think=FalseFalse)");
  auto raising = ChatTemplate::Parse("{{ raise_exception('System role not supported') }}", tokens, "t");
  ASSERT_TRUE(raising.ok());
  const absl::StatusOr<std::string> raised = (*raising)->Render(input);
  EXPECT_EQ(raised.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(raised.status().message(), "System role not supported");
  auto failing = ChatTemplate::Parse("ok\n{{ messages[0].content + 1 }}", tokens, "chat_template.jinja");
  ASSERT_TRUE(failing.ok());
  EXPECT_EQ(std::string((*failing)->Render(input).status().message()),
            "the chat template (chat_template.jinja) failed: line 2, column 24: can only concatenate str (not \"int\") to str");
}

// transformers' continue_final_message: the prompt ends after the final message's text (the markers that close
// its turn cut off), its trailing whitespace kept only where the template wrote the message as given.
// transformers' and vLLM's `documents` (RAG templates): none unless the request gives them, then as given.
TEST(ChatTemplate, DocumentsReachTheTemplateAsGiven) {
  auto t = ChatTemplate::Parse("{% for d in documents %}[{{ loop.index0 }} {% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}]"
                               "{% endfor %}{{ documents is none }}",
                               TokenizerConfig{}, "test");
  ASSERT_TRUE(t.ok()) << t.status();
  ChatInput input;
  input.messages = ordered_json::parse(R"([{"role": "user", "content": "q"}])");
  EXPECT_FALSE((*t)->Render(input).ok()) << "no documents: none, which a template cannot iterate (as in Jinja2)";
  input.documents = ordered_json::parse(R"([{"title": "A", "text": "x"}, {"text": "y", "url": "u"}])");
  const absl::StatusOr<std::string> rendered = (*t)->Render(input);
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(*rendered, "[0 title=A;text=x;][1 text=y;url=u;]False");
  EXPECT_TRUE(CheckDocuments(input.documents, "documents").ok());
  EXPECT_EQ(CheckDocuments(ordered_json::parse("{}"), "documents").message(), "documents: must be a list of document objects");
  EXPECT_EQ(CheckDocuments(ordered_json::parse("[[]]"), "documents").message(), R"(documents[0]: must be an object ({"title", "text"}))");
  EXPECT_EQ(CheckDocuments(ordered_json::parse(R"([{}, {"text": null}])"), "d").message(), "d[1].text: must be a string");
  // A key that is no plain name is quoted, so that the error still begins with the parameter
  EXPECT_EQ(CheckDocuments(ordered_json::parse(R"([{"a b": 1}])"), "documents").message(), R"(documents[0]: parameter "a b" must be a string)");
}

TEST(ChatTemplate, ContinueFinalMessageCutsThePromptAfterTheFinalMessage) {
  TokenizerConfig tokens;
  tokens.eos_token = "</s>";
  auto as_given = ChatTemplate::Parse("{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}\n{% endfor %}"
                                      "{% if add_generation_prompt %}<assistant>{% endif %}", tokens, "t");
  auto trimming = ChatTemplate::Parse("{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{{ eos_token }}\n{% endfor %}", tokens, "t");
  auto changing = ChatTemplate::Parse("{% for m in messages %}<{{ m.role }}>{{ m.content | upper }}{{ eos_token }}{% endfor %}", tokens, "t");
  ASSERT_TRUE(as_given.ok() && trimming.ok() && changing.ok());
  ChatInput input;
  input.add_generation_prompt = false;
  input.continue_final_message = true;
  input.messages = ordered_json::parse(R"([{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi  "}])");
  EXPECT_EQ(*(*as_given)->Render(input), "<user>Say hi</s>\n<assistant>Hi  ") << "written as given: trailing spaces kept";
  EXPECT_EQ(*(*trimming)->Render(input), "<user>Say hi</s>\n<assistant>Hi") << "trimmed by the template: cut after the text";
  input.messages.back()["content"] = " Hi ";
  EXPECT_EQ(*(*as_given)->Render(input), "<user>Say hi</s>\n<assistant> Hi") << "leading whitespace: cut after the trimmed text";
  input.messages.back()["content"] = "Say hi";  // the same text earlier in the prompt: the last place counts
  EXPECT_EQ(*(*as_given)->Render(input), "<user>Say hi</s>\n<assistant>Say hi");

  const auto error_of = [&](const absl::StatusOr<std::shared_ptr<const ChatTemplate>>& t) {
    absl::StatusOr<std::string> text = (*t)->Render(input);
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(text.status().message());
  };
  input.messages.back()["content"] = "hi";
  EXPECT_EQ(error_of(changing).rfind("continue_final_message: the final message's text does not appear", 0), 0u) << error_of(changing);
  input.messages.back()["content"] = "  ";
  EXPECT_EQ(error_of(as_given), "continue_final_message: the final message has no text to continue");
  input.messages.back() = ordered_json{{"role", "assistant"}};  // no content at all
  EXPECT_EQ(error_of(as_given), "continue_final_message: the final message has no text to continue");
  input.messages.back()["content"] = "Hi";
  input.add_generation_prompt = true;
  EXPECT_EQ(error_of(as_given).rfind("continue_final_message: cannot be combined with add_generation_prompt", 0), 0u);
}

TEST(ChatTemplate, StrftimeNowFormatsTheCurrentDate) {
  auto t = ChatTemplate::Parse("{{ strftime_now('%Y') | int > 2000 }} {{ strftime_now('%d %b %Y') | length }}", TokenizerConfig{}, "t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*(*t)->Render(ChatInput{}), "True 11");
}

}  // namespace
}  // namespace arach::jinja
