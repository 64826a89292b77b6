// A model's chat template: the Jinja template shipped in tokenizer_config.json (`chat_template`), in
// chat_template.jinja, or given with --chat_template, parsed once when the model loads and rendered for
// each chat request exactly as Hugging Face transformers renders it (Jinja2 with trim_blocks and
// lstrip_blocks; variables messages, tools, documents, add_generation_prompt, the special tokens, the
// request's chat_template_kwargs; raise_exception and strftime_now).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/chat/jinja_ast.h"
#include "engine/tokenizer/tokenizer_config.h"
#include "nlohmann/json.hpp"

namespace arach {

// What a chat template renders: the conversation and the options of the request.
struct ChatInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{"role", "content", ...}, ...]
  nlohmann::ordered_json tools;                   // null, or OpenAI function specs
  bool add_generation_prompt = true;
  // Leave the final message open (transformers' continue_final_message): the prompt ends right after that
  // message's text, without the markers that close its turn, so that the model continues it (a "prefill" of the
  // assistant's answer). Not together with add_generation_prompt.
  bool continue_final_message = false;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // chat_template_kwargs (e.g. enable_thinking)
  // null, or the documents a template grounds the answer in (transformers' and vLLM's `documents`, for RAG
  // templates such as Granite's and Command R's): [{"title": ..., "text": ...}, ...] (CheckDocuments).
  nlohmann::ordered_json documents;
};

// A template's text and where it came from (a file, or tokenizer_config.json), for error messages.
struct TemplateText {
  std::string source;
  std::string origin;
};

class ChatTemplate {
 public:
  // Parses `source`; an unsupported construct is INVALID_ARGUMENT "<origin>: line L, column C: ...".
  // `tokens` gives bos_token, eos_token, pad_token and unk_token (those set become variables). `tool_use`: a second
  // template for conversations that offer tools, as transformers' apply_chat_template picks a model's "tool_use"
  // template when it is given tools (Hermes 2 Pro's and Command R's tokenizer_config.json name one).
  static absl::StatusOr<std::shared_ptr<const ChatTemplate>> Parse(std::string source, const TokenizerConfig& tokens,
                                                                   std::string origin,
                                                                   std::optional<TemplateText> tool_use = std::nullopt);

  // The prompt text. INVALID_ARGUMENT with the template's own message when it raises (raise_exception),
  // or naming the line and column where rendering failed. With continue_final_message, the text is cut after the
  // last place the final message's text (trimmed) appears, as transformers' apply_chat_template cuts it (keeping
  // the message's trailing whitespace where the template kept it); INVALID_ARGUMENT "continue_final_message: ..."
  // when it is combined with add_generation_prompt, the final message has no text, or the template does not
  // write that text as given.
  absl::StatusOr<std::string> Render(const ChatInput& input) const;

  const std::string& source() const { return default_.text.source; }  // the default template's
  const std::string& origin() const { return default_.text.origin; }
  // The text of the template that renders a conversation with tools (the tool_use template where there is one)
  // or without them.
  const std::string& SourceFor(bool with_tools) const { return Choose(with_tools).text.source; }
  bool has_tool_use() const { return tool_use_.has_value(); }

 private:
  struct Parsed {
    TemplateText text;
    jinja::Template tree;
  };
  static absl::StatusOr<Parsed> ParseOne(TemplateText text);
  const Parsed& Choose(bool with_tools) const { return with_tools && tool_use_ ? *tool_use_ : default_; }

  ChatTemplate() = default;
  Parsed default_;
  std::optional<Parsed> tool_use_;
  TokenizerConfig tokens_;
};

// The variables ChatTemplate::Render defines itself, which a request's extra variables (chat_template_kwargs) may
// not replace: INVALID_ARGUMENT "<field>: may not set 'NAME' (...)" for the first one `extra` sets.
absl::Status CheckExtraTemplateVariables(const nlohmann::ordered_json& extra, absl::string_view field);
// A request's `documents`: a list of objects whose values are strings (vLLM's list[dict[str, str]]). INVALID_ARGUMENT
// naming `field`[i] (or `field`[i].key) otherwise.
absl::Status CheckDocuments(const nlohmann::ordered_json& documents, absl::string_view field);

// The chat template of a model folder, where transformers keeps it: `override_path` when given (one template), else
// `dir`/chat_template.jinja (with additional_chat_templates/tool_use.jinja beside it when there is one), else
// tokenizer_config.json's chat_template (a string, or named templates: "default", and "tool_use" when there is one);
// null when the model has none. Errors name the file; named templates without a "default" are an error.
absl::StatusOr<std::shared_ptr<const ChatTemplate>> LoadChatTemplate(const std::string& dir, const TokenizerConfig& config,
                                                                     const std::string& override_path);

}  // namespace arach
