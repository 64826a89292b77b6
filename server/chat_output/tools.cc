#include "server/chat_output/tools.h"

#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/chat_output/python_call_grammar.h"
#include "server/chat_output/python_calls.h"

namespace arach::server {
namespace {

using json = nlohmann::json;

// OpenAI's rule for function names: 1 to 64 of a-z, A-Z, 0-9, underscore and dash (so a name never needs
// escaping inside the JSON text of a call).
bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

json Tag(json begin, json content, json end) {
  return {{"type", "tag"}, {"begin", std::move(begin)}, {"content", std::move(content)}, {"end", std::move(end)}};
}

json ConstString(const std::string& value) { return {{"type", "const_string"}, {"value", value}}; }

// One call of `tool` in `syntax`, its arguments held to the tool's parameter schema.
json CallTag(ToolCallSyntax syntax, const ToolSpec& tool) {
  // At most one whitespace character between JSON tokens: an unconstrained run of whitespace is where a weak
  // model goes to never finish its call.
  const json arguments = {{"type", "json_schema"}, {"json_schema", tool.parameters}, {"max_whitespace_cnt", 1}};
  switch (syntax) {
    case ToolCallSyntax::kHermes:
      return Tag(absl::StrCat(kHermesOpen, "\n{\"name\": \"", tool.name, "\", \"arguments\": "), arguments,
                 absl::StrCat("}\n", kHermesClose));
    case ToolCallSyntax::kLlama3Json:
      return Tag(absl::StrCat("{\"name\": \"", tool.name, "\", \"parameters\": "), arguments, "}");
    case ToolCallSyntax::kMistralV11:  // the arguments are all of the call: nothing closes it
      return Tag(absl::StrCat(kMistralToolCalls, tool.name, kMistralArgs), arguments, "");
    case ToolCallSyntax::kMistral:
    case ToolCallSyntax::kPythonic:  // PythonicCallTag
    case ToolCallSyntax::kNone:
      break;
  }
  return Tag(absl::StrCat("{\"name\": \"", tool.name, "\", \"arguments\": "), arguments, "}");
}

// A pythonic call of `tool`: `name(arguments)` after `before` ("[" where it opens the list), then `after`.
json PythonicCallTag(const ToolSpec& tool, absl::string_view before, absl::string_view after) {
  const json arguments = {{"type", "grammar"}, {"grammar", PythonArgumentsGrammar(tool)}};
  return Tag(absl::StrCat(before, tool.name, "("), arguments, absl::StrCat(")", after));
}

const char* Separator(ToolCallSyntax syntax) {
  switch (syntax) {
    case ToolCallSyntax::kHermes: return "\n";
    case ToolCallSyntax::kLlama3Json: return "; ";
    case ToolCallSyntax::kMistralV11: return "";  // each call opens with its own [TOOL_CALLS]
    default: return ", ";
  }
}

json TagsWithSeparator(json tags, const char* separator, bool at_least_one, bool stop_after_first) {
  return {{"type", "tags_with_separator"}, {"tags", std::move(tags)}, {"separator", separator},
          {"at_least_one", at_least_one}, {"stop_after_first", stop_after_first}};
}

// `content` (response_format / structured_outputs) as an element of a structural tag, or nullopt for a kind that
// cannot be one (a structural tag of the client's own). A JSON Schema is enforced strictly there (xgrammar's
// structural tags have no non-strict schemas): what it lets through is valid under the schema all the same. As
// in a call's arguments, at most one whitespace character between JSON tokens.
std::optional<json> ContentFormat(const OutputConstraint& content) {
  switch (content.kind) {
    case OutputConstraint::Kind::kJsonObject:
      return json{{"type", "json_schema"}, {"json_schema", {{"type", "object"}}}, {"max_whitespace_cnt", 1}};
    case OutputConstraint::Kind::kJsonSchema: {
      json schema = json::parse(content.text, nullptr, /*allow_exceptions=*/false);  // validated when the request was read
      if (schema.is_discarded()) return std::nullopt;
      return json{{"type", "json_schema"}, {"json_schema", std::move(schema)}, {"max_whitespace_cnt", 1}};
    }
    case OutputConstraint::Kind::kRegex:
      return json{{"type", "regex"}, {"pattern", content.text}};
    case OutputConstraint::Kind::kGrammar:
      return json{{"type", "grammar"}, {"grammar", content.text}};
    case OutputConstraint::Kind::kChoice: {
      json elements = json::array();
      for (const std::string& choice : content.choices) elements.push_back(ConstString(choice));
      return json{{"type", "or"}, {"elements", std::move(elements)}};
    }
    case OutputConstraint::Kind::kStructuralTag:
    case OutputConstraint::Kind::kNone:
      break;
  }
  return std::nullopt;
}

// Where the model's text begins within its turn: after a prompt ending `prompt_end` (trailing whitespace stripped)
// whose turn already holds `continued` (a prefill's text).
TurnStart StartOfTurn(const ChatOutputFormat& format, absl::string_view prompt_end, absl::string_view continued) {
  if (!format.reasoning) return TurnStart::kOpen;
  continued = absl::StripAsciiWhitespace(continued);
  if (continued.empty()) return absl::EndsWith(prompt_end, format.think_open) ? TurnStart::kReasoning : TurnStart::kOpen;
  const size_t open = continued.rfind(format.think_open);
  if (open != absl::string_view::npos && continued.find(format.think_close, open) == absl::string_view::npos) {
    return TurnStart::kReasoning;
  }
  return TurnStart::kContent;
}

// Whether `marker` is one special token of `tokenizer` (whose text leaves the answer unless special tokens are kept).
bool IsSpecialToken(const Tokenizer& tokenizer, absl::string_view marker) {
  const std::optional<int32_t> id = tokenizer.TokenToId(marker);
  return id && tokenizer.IsSpecial(*id);
}

// The text that opens a call in `syntax` where `tokenizer` encodes it as one token (a special or added one), else
// empty: a marker written in pieces is text a turn may hold for other reasons (Llama's `{"name": "`, a pythonic `[`).
std::string SingleTokenCallMarker(ToolCallSyntax syntax, const Tokenizer& tokenizer) {
  absl::string_view marker;
  switch (syntax) {
    case ToolCallSyntax::kHermes: marker = kHermesOpen; break;
    case ToolCallSyntax::kLlama3Json: marker = kLlamaPythonTag; break;
    case ToolCallSyntax::kMistral:
    case ToolCallSyntax::kMistralV11: marker = kMistralToolCalls; break;
    case ToolCallSyntax::kPythonic:
    case ToolCallSyntax::kNone: break;
  }
  if (marker.empty()) return "";
  const absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(std::string(marker), /*add_special_tokens=*/false);
  return ids.ok() && ids->size() == 1 ? std::string(marker) : "";
}

// The pythonic syntax writes a call as Python: its function's name and its parameters' must be identifiers.
absl::Status CheckPythonNames(const std::vector<ToolSpec>& tools, const std::string& tools_field) {
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = absl::StrCat(tools_field, "[", i, "]");
    if (!IsPythonIdentifier(tools[i].name)) {
      return InvalidField(at, absl::StrCat("'", tools[i].name, "' is not a Python identifier, which this model's pythonic "
                                           "tool calls need"));
    }
    const auto properties = tools[i].parameters.find("properties");
    if (properties == tools[i].parameters.end() || !properties->is_object()) continue;
    for (const auto& [name, schema] : properties->items()) {
      if (!IsPythonIdentifier(name)) {
        return InvalidField(at, absl::StrCat("parameter '", name, "' is not a Python identifier, which this model's pythonic "
                                             "tool calls need"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<ToolSpec>> ParseTools(const json& tools, const std::string& field, ToolShape shape) {
  std::vector<ToolSpec> specs;
  if (tools.is_null()) return specs;
  if (!tools.is_array()) return InvalidField(field, "must be a list of tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = absl::StrCat(field, "[", i, "]");
    const json& tool = tools[i];
    if (!tool.is_object()) return InvalidField(at, "must be an object");
    const auto type = tool.find("type");
    if (type == tool.end() || !type->is_string()) return InvalidField(at + ".type", "is required (\"function\")");
    if (*type != "function") {
      return InvalidField(at + ".type", absl::StrCat("'", type->get<std::string>(), "' is not supported (function tools only)"));
    }
    // The object holding the function's fields, and the prefix naming them.
    const json* function = &tool;
    std::string function_at = at;
    if (shape == ToolShape::kNested) {
      const auto nested = tool.find("function");
      if (nested == tool.end() || !nested->is_object()) return InvalidField(at + ".function", "is required (an object)");
      function = &*nested;
      function_at = at + ".function";
    }
    ToolSpec spec;
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() || !ValidFunctionName(name->get<std::string>())) {
      return InvalidField(function_at + ".name", "is required: 1 to 64 letters, digits, underscores or dashes");
    }
    spec.name = name->get<std::string>();
    for (const ToolSpec& earlier : specs) {
      if (earlier.name == spec.name) return InvalidField(function_at + ".name", absl::StrCat("'", spec.name, "' is given twice"));
    }
    const auto parameters = function->find("parameters");
    if (parameters == function->end() || parameters->is_null()) {
      spec.parameters = {{"type", "object"}, {"properties", json::object()}};
    } else if (!parameters->is_object()) {
      return InvalidField(function_at + ".parameters", "must be a JSON Schema object");
    } else {
      // A call's arguments are a JSON object (the parsers take nothing else for a call): a schema of another
      // type is refused, one without a type is held to objects.
      spec.parameters = *parameters;
      const auto parameters_type = parameters->find("type");
      if (parameters_type == parameters->end()) {
        spec.parameters["type"] = "object";
      } else if (*parameters_type != "object") {
        return InvalidField(function_at + ".parameters.type", "must be \"object\" (a call's arguments are a JSON object)");
      }
    }
    if (const auto description = function->find("description"); description != function->end() && !description->is_null() &&
                                                                 !description->is_string()) {
      return InvalidField(function_at + ".description", "must be a string");
    }
    if (const auto strict = function->find("strict"); strict != function->end() && !strict->is_null() && !strict->is_boolean()) {
      return InvalidField(function_at + ".strict", "must be true or false");
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

absl::StatusOr<ToolChoice> ParseToolChoice(const json& choice, const std::vector<ToolSpec>& tools, const std::string& field,
                                           ToolShape shape) {
  const char* const function_form = shape == ToolShape::kNested ? "{\"type\": \"function\", \"function\": {\"name\": ...}}"
                                                                : "{\"type\": \"function\", \"name\": ...}";
  ToolChoice out;
  if (choice.is_null()) {
    out.mode = tools.empty() ? ToolChoice::Mode::kNone : ToolChoice::Mode::kAuto;
    return out;
  }
  if (choice.is_string()) {
    const std::string mode = choice.get<std::string>();
    if (mode == "auto") {
      out.mode = ToolChoice::Mode::kAuto;
    } else if (mode == "none") {
      out.mode = ToolChoice::Mode::kNone;
    } else if (mode == "required") {
      out.mode = ToolChoice::Mode::kRequired;
    } else {
      return InvalidField(field, absl::StrCat("'", mode, "' is not auto, none, required or a function"));
    }
  } else if (choice.is_object()) {
    const auto type = choice.find("type");
    if (type == choice.end() || *type != "function") {
      return InvalidField(field + ".type", absl::StrCat("must be \"function\" (or tool_choice auto, none or required): ", function_form));
    }
    const json* function = &choice;
    std::string name_at = field + ".name";
    if (shape == ToolShape::kNested) {
      const auto nested = choice.find("function");
      if (nested == choice.end() || !nested->is_object()) return InvalidField(field + ".function", absl::StrCat("is required: ", function_form));
      function = &*nested;
      name_at = field + ".function.name";
    }
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string()) return InvalidField(name_at, "is required (a string)");
    out.mode = ToolChoice::Mode::kNamed;
    out.name = name->get<std::string>();
    bool known = false;
    for (const ToolSpec& tool : tools) known = known || tool.name == out.name;
    if (!known) return InvalidField(name_at, absl::StrCat("'", out.name, "' is not one of the tools"));
  } else {
    return InvalidField(field, absl::StrCat("must be auto, none, required or ", function_form));
  }
  if (out.mode != ToolChoice::Mode::kNone && tools.empty()) return InvalidField(field, "asks for tool calls but no tools are given");
  return out;
}

nlohmann::ordered_json ToolsForPrompt(nlohmann::ordered_json tools, const ToolChoice& choice, bool exclude_for_none) {
  return choice.mode == ToolChoice::Mode::kNone && exclude_for_none ? nlohmann::ordered_json() : std::move(tools);
}

OutputConstraint ToolCallConstraint(const ChatOutputFormat& format, const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                    bool parallel, ReasoningFirst reasoning, const std::optional<nlohmann::json>& content) {
  const ToolCallSyntax syntax = format.tools;
  if (syntax == ToolCallSyntax::kNone || choice.mode == ToolChoice::Mode::kNone) return {};
  const bool named = choice.mode == ToolChoice::Mode::kNamed;
  const bool one_call = named || !parallel;
  std::vector<ToolSpec> offered;
  for (const ToolSpec& tool : tools) {
    if (!named || tool.name == choice.name) offered.push_back(tool);
  }
  json tags = json::array();
  for (const ToolSpec& tool : offered) {
    tags.push_back(syntax == ToolCallSyntax::kPythonic ? PythonicCallTag(tool, "", "") : CallTag(syntax, tool));
  }
  // The turn as calls and nothing else (at least one). Mistral's markers are special tokens in its own tokenizer;
  // the constraint writes them as text all the same (engine/constraint gives them their text: kWritableSpecialTokens),
  // and the request keeps special tokens in its text.
  const auto calls_only = [&] {
    const json calls = TagsWithSeparator(tags, Separator(syntax), true, one_call);
    if (syntax == ToolCallSyntax::kPythonic) {
      return json{{"type", "sequence"}, {"elements", json::array({ConstString("["), calls, ConstString("]")})}};
    }
    if (syntax != ToolCallSyntax::kMistral) return calls;
    return json{{"type", "sequence"},
                {"elements", json::array({ConstString(std::string(kMistralToolCalls)), ConstString("["), calls, ConstString("]")})}};
  };
  json format_json;
  if (choice.mode == ToolChoice::Mode::kAuto && content) {
    format_json = {{"type", "or"}, {"elements", json::array({*content, calls_only()})}};  // content in its format, or calls
  } else if (choice.mode == ToolChoice::Mode::kAuto) {
    if (syntax == ToolCallSyntax::kMistral) {
      const json calls = TagsWithSeparator(tags, Separator(syntax), true, one_call);
      tags = json::array({Tag(absl::StrCat(kMistralToolCalls, "["), calls, "]")});
    }
    json triggers = json::array({std::string(kHermesOpen)});
    if (syntax == ToolCallSyntax::kLlama3Json) triggers = {"{\"name\": \""};
    if (IsMistralSyntax(syntax)) triggers = {std::string(kMistralToolCalls)};
    if (syntax == ToolCallSyntax::kPythonic) {
      // `[name(` of a tool opens the list (free text may hold other brackets); one call closes it at once, and where
      // more may come, each `, name(` of a tool is the next (the list's `]` is the model's).
      tags = json::array();
      triggers = json::array();
      for (const ToolSpec& tool : offered) {
        tags.push_back(PythonicCallTag(tool, "[", one_call ? "]" : ""));
        triggers.push_back(absl::StrCat("[", tool.name, "("));
        if (one_call) continue;
        tags.push_back(PythonicCallTag(tool, ", ", ""));
        triggers.push_back(absl::StrCat(", ", tool.name, "("));
      }
    }
    format_json = {{"type", "triggered_tags"}, {"triggers", triggers}, {"tags", tags},
                   {"at_least_one", false}, {"stop_after_first", one_call}};
  } else {
    format_json = calls_only();
  }
  // Free text (auto without content) holds any reasoning; elsewhere the reasoning comes first: a <think> block that
  // may open the turn, or the rest of the one the turn starts inside. It ends at the first </think>, and the
  // whitespace models write after it (Qwen3's blank line, one newline, none) may follow, a few characters at most (a
  // run of whitespace is where a weak model goes to never finish).
  if (reasoning != ReasoningFirst::kNone && (choice.mode != ToolChoice::Mode::kAuto || content)) {
    const std::string open = reasoning == ReasoningFirst::kOptional ? std::string(format.think_open) : "";
    const json block = Tag(open, {{"type", "any_text"}}, std::string(format.think_close));
    const json first = reasoning == ReasoningFirst::kOptional ? json{{"type", "optional"}, {"content", block}} : block;
    const json whitespace = {{"type", "regex"}, {"pattern", "[ \\t\\r\\n]{0,4}"}};
    format_json = {{"type", "sequence"}, {"elements", json::array({first, whitespace, format_json})}};
  }
  return OutputConstraint::StructuralTag(json{{"type", "structural_tag"}, {"format", format_json}}.dump());
}

absl::StatusOr<ChatTurnPlan> PlanChatTurn(const ChatOutputFormat& format, const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                          bool parallel, absl::string_view prompt, absl::string_view continued,
                                          const OutputConstraint& content, const Tokenizer& tokenizer, const std::string& tools_field,
                                          const std::string& tool_choice_field) {
  ChatTurnPlan plan;
  const absl::string_view prompt_end = absl::StripTrailingAsciiWhitespace(prompt);
  plan.turn_start = StartOfTurn(format, prompt_end, continued);
  plan.keep_special_tokens =
      format.reasoning && (IsSpecialToken(tokenizer, format.think_open) || IsSpecialToken(tokenizer, format.think_close));
  if (tools.empty()) return plan;
  if (choice.mode == ToolChoice::Mode::kNone) {
    plan.banned_call_marker = SingleTokenCallMarker(format.tools, tokenizer);
    return plan;
  }
  if (format.tools == ToolCallSyntax::kNone) {
    return InvalidField(tools_field, absl::StrCat("this model's chat template writes no tool-call syntax arach-serve can read; start "
                                                  "the server with --tool_call_parser hermes, llama3_json, mistral, mistral_v11 or "
                                                  "pythonic, or leave the tools out"));
  }
  if (format.tools == ToolCallSyntax::kPythonic) ARACH_RETURN_IF_ERROR(CheckPythonNames(tools, tools_field));
  // The content's format joins the calls' (auto: either; required or named: calls only, so it has nothing to hold).
  std::optional<json> content_format;
  if (content.active() && choice.mode == ToolChoice::Mode::kAuto) {
    content_format = ContentFormat(content);
    if (!content_format) {
      return InvalidField(tool_choice_field, absl::StrCat("tool calls cannot be combined with a ", content.KindName(),
                                                          "; set tool_choice to none or drop the response format"));
    }
  }
  plan.parse_tools = true;
  if (IsMistralSyntax(format.tools)) {
    plan.keep_special_tokens = plan.keep_special_tokens || IsSpecialToken(tokenizer, kMistralToolCalls);
  }
  // Where the prompt already closed the reasoning (e.g. Qwen3 with enable_thinking false) or a prefill went on to
  // the content, none may come.
  ReasoningFirst reasoning = ReasoningFirst::kNone;
  if (plan.turn_start == TurnStart::kReasoning) {
    reasoning = ReasoningFirst::kRequired;
  } else if (format.reasoning && plan.turn_start == TurnStart::kOpen && !absl::EndsWith(prompt_end, format.think_close)) {
    reasoning = ReasoningFirst::kOptional;
  }
  plan.constraint = ToolCallConstraint(format, tools, choice, parallel, reasoning, content_format);
  plan.joins_content = content_format.has_value() && plan.constraint.active();
  return plan;
}

absl::Status CheckJoinedContent(const ChatTurnPlan& plan, const Engine& engine, const OutputConstraint& content,
                                const std::string& content_field) {
  return plan.joins_content ? engine.CheckConstraint(content, content_field) : absl::OkStatus();
}

std::string NewToolCallId(ToolCallSyntax syntax) {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device());
  if (IsMistralSyntax(syntax)) {
    constexpr absl::string_view kAlphanumeric = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string id;
    for (int i = 0; i < 9; ++i) id += kAlphanumeric[rng() % kAlphanumeric.size()];
    return id;
  }
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += "0123456789abcdef"[rng() % 16];
  return id;
}

}  // namespace arach::server
