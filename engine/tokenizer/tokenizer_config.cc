#include "engine/tokenizer/tokenizer_config.h"

#include "absl/strings/str_cat.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

using json = nlohmann::json;

absl::Status FieldError(const std::string& source, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": field \"", field, "\" ", what));
}

absl::StatusOr<std::optional<bool>> OptionalBool(const json& root, const char* key, const std::string& source) {
  const auto it = root.find(key);
  if (it == root.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) return FieldError(source, key, "must be true or false");
  return std::optional<bool>(it->get<bool>());
}

// A special token: "<s>", or {"content": "<s>", ...}, or null.
absl::StatusOr<std::optional<std::string>> SpecialToken(const json& root, const char* key, const std::string& source) {
  const auto it = root.find(key);
  if (it == root.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return std::optional<std::string>((*it)["content"].get<std::string>());
  }
  return FieldError(source, key, "must be a string or an object with a string \"content\"");
}

}  // namespace

absl::StatusOr<TokenizerConfig> ParseTokenizerConfig(const std::string& json_text, const std::string& source) {
  const json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return absl::InvalidArgumentError(absl::StrCat(source, ": not a JSON object"));
  TokenizerConfig config;
  ARACH_ASSIGN_OR_RETURN(config.add_bos_token, OptionalBool(root, "add_bos_token", source));
  ARACH_ASSIGN_OR_RETURN(config.add_eos_token, OptionalBool(root, "add_eos_token", source));
  ARACH_ASSIGN_OR_RETURN(config.bos_token, SpecialToken(root, "bos_token", source));
  ARACH_ASSIGN_OR_RETURN(config.eos_token, SpecialToken(root, "eos_token", source));
  ARACH_ASSIGN_OR_RETURN(config.pad_token, SpecialToken(root, "pad_token", source));
  ARACH_ASSIGN_OR_RETURN(config.unk_token, SpecialToken(root, "unk_token", source));
  if (const auto it = root.find("chat_template"); it != root.end() && !it->is_null()) {
    if (it->is_string()) {
      config.chat_templates["default"] = it->get<std::string>();
    } else if (it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i) {
        const json& entry = (*it)[i];
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
            !entry["template"].is_string()) {
          return FieldError(source, absl::StrCat("chat_template[", i, "]"), "must be {\"name\": ..., \"template\": ...}");
        }
        config.chat_templates[entry["name"].get<std::string>()] = entry["template"].get<std::string>();
      }
    } else {
      return FieldError(source, "chat_template", "must be a string or a list of named templates");
    }
  }
  return config;
}

absl::StatusOr<TokenizerConfig> LoadTokenizerConfig(const std::string& path) {
  ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseTokenizerConfig(text, path);
}

}  // namespace arach
