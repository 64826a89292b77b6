// arach-run chat-template: renders a conversation with a model's chat template and prints the prompt exactly
// (no newline added), so that any template can be checked against transformers' apply_chat_template.
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/chat/chat_template.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "tools/arach_run/commands.h"

namespace arach::tools {

absl::Status RunChatTemplate(const ChatTemplateOptions& options) {
  if (options.model_dir.empty() == options.tokenizer_config.empty()) {
    return absl::InvalidArgumentError("give --model DIR or --tokenizer_config FILE (one of them)");
  }
  if (options.conversation.empty()) return absl::InvalidArgumentError("--conversation FILE.json is required");
  const std::string config_path = options.tokenizer_config.empty()
                                      ? (std::filesystem::path(options.model_dir) / "tokenizer_config.json").string()
                                      : options.tokenizer_config;
  TokenizerConfig config;
  if (std::filesystem::exists(config_path)) {
    ARACH_ASSIGN_OR_RETURN(config, LoadTokenizerConfig(config_path));
  } else if (!options.tokenizer_config.empty()) {
    return absl::NotFoundError(absl::StrCat(config_path, ": no such file"));
  }
  const std::string dir = options.model_dir.empty() ? std::filesystem::path(config_path).parent_path().string() : options.model_dir;
  ARACH_ASSIGN_OR_RETURN(std::shared_ptr<const ChatTemplate> chat_template, LoadChatTemplate(dir, config, options.chat_template));
  if (chat_template == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(config_path, " has no chat_template (give --chat_template FILE)"));
  }

  ARACH_ASSIGN_OR_RETURN(std::string conversation_text, ReadFileToString(options.conversation));
  const nlohmann::ordered_json conversation = nlohmann::ordered_json::parse(conversation_text, nullptr, false);
  if (conversation.is_discarded() || !conversation.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(options.conversation, ": must be a JSON object {\"messages\": [...], \"tools\": [...], \"documents\": [...]}"));
  }
  ChatInput input;
  if (!conversation.contains("messages") || !conversation["messages"].is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(options.conversation, ": \"messages\" must be a list"));
  }
  input.messages = conversation["messages"];
  if (conversation.contains("tools")) input.tools = conversation["tools"];
  if (conversation.contains("documents") && !conversation["documents"].is_null()) {
    ARACH_RETURN_IF_ERROR(CheckDocuments(conversation["documents"], absl::StrCat(options.conversation, ": documents")));
    input.documents = conversation["documents"];
  }
  input.add_generation_prompt = options.add_generation_prompt;
  if (!options.extra.empty()) {
    input.extra = nlohmann::ordered_json::parse(options.extra, nullptr, false);
    if (input.extra.is_discarded() || !input.extra.is_object()) return absl::InvalidArgumentError("--extra must be a JSON object");
  }
  ARACH_ASSIGN_OR_RETURN(std::string prompt, chat_template->Render(input));
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace arach::tools
