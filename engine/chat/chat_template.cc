#include "engine/chat/chat_template.h"

#include <ctime>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/jinja_interpreter.h"
#include "engine/chat/jinja_parser.h"
#include "engine/core/field_error.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"

namespace arach {
namespace {

using jinja::CallArgs;
using jinja::Value;

Value RaiseException() {
  return Value::MakeFunction("raise_exception", [](CallArgs& a) -> absl::StatusOr<Value> {
    absl::Status raised = absl::InvalidArgumentError(a.positional.empty() ? "" : a.positional[0].Str());
    raised.SetPayload(jinja::kRaisedByTemplate, absl::Cord("1"));
    return raised;
  });
}

// strftime_now(format): the local time now, formatted with C's strftime (the directives Python shares).
Value StrftimeNow() {
  return Value::MakeFunction("strftime_now", [](CallArgs& a) -> absl::StatusOr<Value> {
    if (a.positional.empty() || !a.positional[0].is_string()) return absl::InvalidArgumentError("strftime_now needs a format string");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buffer[256];
    const size_t n = std::strftime(buffer, sizeof(buffer), a.positional[0].as_string().c_str(), &local);
    return Value::String(std::string(buffer, n));
  });
}

}  // namespace

absl::StatusOr<ChatTemplate::Parsed> ChatTemplate::ParseOne(TemplateText text) {
  absl::StatusOr<jinja::Template> tree = jinja::ParseTemplate(text.source);
  if (!tree.ok()) return absl::InvalidArgumentError(absl::StrCat(text.origin, ": chat template: ", tree.status().message()));
  return Parsed{std::move(text), std::move(*tree)};
}

absl::StatusOr<std::shared_ptr<const ChatTemplate>> ChatTemplate::Parse(std::string source, const TokenizerConfig& tokens,
                                                                        std::string origin, std::optional<TemplateText> tool_use) {
  std::shared_ptr<ChatTemplate> t(new ChatTemplate());
  ARACH_ASSIGN_OR_RETURN(t->default_, ParseOne(TemplateText{std::move(source), std::move(origin)}));
  if (tool_use.has_value()) {
    ARACH_ASSIGN_OR_RETURN(t->tool_use_, ParseOne(std::move(*tool_use)));
  }
  t->tokens_ = tokens;
  return std::shared_ptr<const ChatTemplate>(std::move(t));
}

absl::Status CheckExtraTemplateVariables(const nlohmann::ordered_json& extra, absl::string_view field) {
  if (!extra.is_object()) return absl::OkStatus();
  for (const char* own : {"messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token", "pad_token",
                          "unk_token", "raise_exception", "strftime_now"}) {
    if (extra.contains(own)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": may not set '", own, "' (the template's own variable)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDocuments(const nlohmann::ordered_json& documents, absl::string_view field) {
  if (!documents.is_array()) return absl::InvalidArgumentError(absl::StrCat(field, ": must be a list of document objects"));
  for (size_t i = 0; i < documents.size(); ++i) {
    const nlohmann::ordered_json& document = documents[i];
    if (!document.is_object()) return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "]: must be an object ({\"title\", \"text\"})"));
    for (const auto& [key, value] : document.items()) {
      if (!value.is_string()) return KeyError(absl::StrCat(field, "[", i, "]"), key, "must be a string");
    }
  }
  return absl::OkStatus();
}

namespace {

// `rendered` cut after the final message's text (ChatTemplate::Render's continue_final_message).
absl::StatusOr<std::string> OpenFinalMessage(std::string rendered, const nlohmann::ordered_json& messages) {
  const auto bad = [](absl::string_view what) { return absl::InvalidArgumentError(absl::StrCat("continue_final_message: ", what)); };
  // (find, not operator[]: the const operator[] of a missing key is undefined behaviour in nlohmann)
  const nlohmann::ordered_json* final_message = messages.is_array() && !messages.empty() ? &messages.back() : nullptr;
  const auto content = final_message != nullptr && final_message->is_object() ? final_message->find("content") : nlohmann::ordered_json::const_iterator();
  if (final_message == nullptr || !final_message->is_object() || content == final_message->end() || !content->is_string() ||
      absl::StripAsciiWhitespace(content->get_ref<const std::string&>()).empty()) {
    return bad("the final message has no text to continue");
  }
  const std::string& text = content->get_ref<const std::string&>();
  const absl::string_view stripped = absl::StripAsciiWhitespace(text);
  const size_t at = absl::string_view(rendered).rfind(stripped);
  if (at == std::string::npos) {
    return bad("the final message's text does not appear in the prompt the chat template writes (the template changes it)");
  }
  const absl::string_view leading_trimmed = absl::StripLeadingAsciiWhitespace(text);
  // Where the template wrote the message as given (no leading whitespace, trailing whitespace kept), the prompt keeps
  // its trailing whitespace too; else it ends with the trimmed text (transformers' rule, to the character).
  const bool kept = absl::string_view(rendered).substr(at, leading_trimmed.size()) == text;
  rendered.resize(at + (kept ? leading_trimmed.size() : stripped.size()));
  return rendered;
}

}  // namespace

absl::StatusOr<std::string> ChatTemplate::Render(const ChatInput& input) const {
  if (input.continue_final_message && input.add_generation_prompt) {
    return absl::InvalidArgumentError("continue_final_message: cannot be combined with add_generation_prompt (set it false)");
  }
  jinja::Dict variables;
  ARACH_ASSIGN_OR_RETURN(Value messages, Value::FromJson(input.messages));
  variables.Set("messages", std::move(messages));
  if (input.tools.is_null()) {
    variables.Set("tools", Value::None());
  } else {
    ARACH_ASSIGN_OR_RETURN(Value tools, Value::FromJson(input.tools));
    variables.Set("tools", std::move(tools));
  }
  if (input.documents.is_null()) {
    variables.Set("documents", Value::None());
  } else {
    ARACH_ASSIGN_OR_RETURN(Value documents, Value::FromJson(input.documents));
    variables.Set("documents", std::move(documents));
  }
  variables.Set("add_generation_prompt", Value::Bool(input.add_generation_prompt));
  for (const auto& [name, token] : {std::pair{"bos_token", &tokens_.bos_token}, std::pair{"eos_token", &tokens_.eos_token},
                                    std::pair{"pad_token", &tokens_.pad_token}, std::pair{"unk_token", &tokens_.unk_token}}) {
    if (token->has_value()) variables.Set(name, Value::String(**token));
  }
  variables.Set("raise_exception", RaiseException());
  variables.Set("strftime_now", StrftimeNow());
  if (input.extra.is_object()) {
    for (const auto& [key, value] : input.extra.items()) {
      ARACH_ASSIGN_OR_RETURN(Value v, Value::FromJson(value));
      variables.Set(key, std::move(v));
    }
  }
  const Parsed& chosen = Choose(!input.tools.is_null());
  absl::StatusOr<std::string> text = jinja::Render(chosen.tree, variables);
  if (!text.ok()) {
    if (text.status().GetPayload(jinja::kRaisedByTemplate)) return absl::InvalidArgumentError(text.status().message());
    return absl::InvalidArgumentError(absl::StrCat("the chat template (", chosen.text.origin, ") failed: ", text.status().message()));
  }
  if (input.continue_final_message) return OpenFinalMessage(std::move(*text), input.messages);
  return text;
}

absl::StatusOr<std::shared_ptr<const ChatTemplate>> LoadChatTemplate(const std::string& dir, const TokenizerConfig& config,
                                                                     const std::string& override_path) {
  if (!override_path.empty()) {
    ARACH_ASSIGN_OR_RETURN(std::string source, ReadFileToString(override_path));
    return ChatTemplate::Parse(std::move(source), config, override_path);
  }
  const std::filesystem::path root(dir);
  const std::string jinja_file = (root / "chat_template.jinja").string();
  if (std::filesystem::exists(jinja_file)) {
    ARACH_ASSIGN_OR_RETURN(std::string source, ReadFileToString(jinja_file));
    std::optional<TemplateText> tool_use;
    const std::string tool_use_file = (root / "additional_chat_templates" / "tool_use.jinja").string();
    if (std::filesystem::exists(tool_use_file)) {
      ARACH_ASSIGN_OR_RETURN(std::string tool_source, ReadFileToString(tool_use_file));
      tool_use = TemplateText{std::move(tool_source), tool_use_file};
    }
    return ChatTemplate::Parse(std::move(source), config, jinja_file, std::move(tool_use));
  }
  if (config.chat_templates.empty()) return std::shared_ptr<const ChatTemplate>();
  const std::string config_file = (root / "tokenizer_config.json").string();
  const auto named_default = config.chat_templates.find("default");
  if (named_default == config.chat_templates.end()) {
    std::string names;
    for (const auto& [name, source] : config.chat_templates) absl::StrAppend(&names, names.empty() ? "" : ", ", name);
    return absl::InvalidArgumentError(absl::StrCat(config_file, ": chat_template: no template named \"default\" (it names ", names, ")"));
  }
  std::optional<TemplateText> tool_use;
  if (const auto named_tool_use = config.chat_templates.find("tool_use"); named_tool_use != config.chat_templates.end()) {
    tool_use = TemplateText{named_tool_use->second, absl::StrCat(config_file, " (chat_template \"tool_use\")")};
  }
  return ChatTemplate::Parse(named_default->second, config, config_file, std::move(tool_use));
}

}  // namespace arach
