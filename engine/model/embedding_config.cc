#include "engine/model/embedding_config.h"

#include <filesystem>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "engine/model/json_object.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

using json = nlohmann::json;

constexpr char kModulePrefix[] = "sentence_transformers.models.";

// The Pooling module's config.json: exactly one of the modes this engine computes, over the whole prompt.
absl::StatusOr<PoolingMode> ReadPoolingConfig(const std::string& path, int hidden_size) {
  ARACH_ASSIGN_OR_RETURN(const json root, ReadJsonObjectFile(path));
  const auto flag = [&](const char* field) -> absl::StatusOr<bool> {
    const auto it = root.find(field);
    if (it == root.end() || it->is_null()) return false;
    if (!it->is_boolean()) return InvalidField(path, absl::StrCat("field \"", field, "\" must be true or false"));
    return it->get<bool>();
  };
  for (const char* unsupported : {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"}) {
    ARACH_ASSIGN_OR_RETURN(const bool on, flag(unsupported));
    if (on) return InvalidField(path, absl::StrCat("\"", unsupported, "\" is not supported (cls, mean or last-token pooling only)"));
  }
  if (const auto it = root.find("include_prompt"); it != root.end() && !(it->is_boolean() && it->get<bool>())) {
    return InvalidField(path, "\"include_prompt\" other than true is not supported (the embedding pools every prompt token)");
  }
  if (const auto it = root.find("word_embedding_dimension"); it != root.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() != hidden_size) {
      return InvalidField(path, absl::StrCat("\"word_embedding_dimension\" ", it->dump(), " is not the model's hidden_size ", hidden_size));
    }
  }
  std::vector<PoolingMode> modes;
  for (const auto& [field, mode] : {std::pair{"pooling_mode_cls_token", PoolingMode::kFirstToken},
                                    {"pooling_mode_mean_tokens", PoolingMode::kMean},
                                    {"pooling_mode_lasttoken", PoolingMode::kLastToken}}) {
    ARACH_ASSIGN_OR_RETURN(const bool on, flag(field));
    if (on) modes.push_back(mode);
  }
  if (modes.size() != 1) {
    return InvalidField(path, absl::StrCat(modes.size(), " pooling modes are set; one of pooling_mode_cls_token, "
                                      "pooling_mode_mean_tokens, pooling_mode_lasttoken must be (concatenated modes are not supported)"));
  }
  return modes.front();
}

// The Transformer module's sentence_bert_config.json, when there is one: the input's length and case.
absl::Status ReadTransformerConfig(const std::string& path, EmbeddingConfig& config) {
  if (!std::filesystem::exists(path)) return absl::OkStatus();
  ARACH_ASSIGN_OR_RETURN(const json root, ReadJsonObjectFile(path));
  config.input_source = path;
  if (const auto it = root.find("max_seq_length"); it != root.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > std::numeric_limits<int>::max()) {
      return InvalidField(path, absl::StrCat("\"max_seq_length\" ", it->dump(), " must be a positive integer or null"));
    }
    config.max_tokens = static_cast<int>(it->get<int64_t>());
  }
  if (const auto it = root.find("do_lower_case"); it != root.end() && !it->is_null()) {
    if (!it->is_boolean()) return InvalidField(path, "field \"do_lower_case\" must be true or false");
    config.lowercase = it->get<bool>();
  }
  return absl::OkStatus();
}

// config_sentence_transformers.json, when there is one: the prompt every text input gets before it.
absl::Status ReadDefaultPrompt(const std::string& path, EmbeddingConfig& config) {
  if (!std::filesystem::exists(path)) return absl::OkStatus();
  ARACH_ASSIGN_OR_RETURN(const json root, ReadJsonObjectFile(path));
  const auto name_it = root.find("default_prompt_name");
  if (name_it == root.end() || name_it->is_null()) return absl::OkStatus();
  if (!name_it->is_string()) return InvalidField(path, "field \"default_prompt_name\" must be a string or null");
  const std::string name = name_it->get<std::string>();
  const auto prompts_it = root.find("prompts");
  const json* prompt = nullptr;
  if (prompts_it != root.end() && prompts_it->is_object()) {
    if (const auto it = prompts_it->find(name); it != prompts_it->end()) prompt = &*it;
  }
  if (prompt == nullptr || !prompt->is_string()) {
    return InvalidField(path, absl::StrCat("\"default_prompt_name\" \"", name, "\" names no string in \"prompts\""));
  }
  config.default_prompt = prompt->get<std::string>();
  return absl::OkStatus();
}

// A module's folder: its "path" string, relative to the model's folder.
absl::StatusOr<std::filesystem::path> ModuleFolder(const std::string& dir, const json& module, const std::string& source, size_t index,
                                                   const std::string& name) {
  const auto path_it = module.find("path");
  if (path_it == module.end() || !path_it->is_string()) {
    return InvalidField(source, absl::StrCat("module ", index, " (", name, ") has no \"path\" string"));
  }
  return std::filesystem::path(dir) / path_it->get<std::string>();
}

}  // namespace

const char* PoolingModeName(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::kLastToken: return "last_token";
    case PoolingMode::kMean: return "mean";
    case PoolingMode::kFirstToken: return "first_token";
  }
  return "unknown";
}

absl::StatusOr<EmbeddingConfig> LoadEmbeddingConfig(const std::string& dir, int hidden_size) {
  EmbeddingConfig config;
  const std::filesystem::path modules_path = std::filesystem::path(dir) / "modules.json";
  if (!std::filesystem::exists(modules_path)) return config;
  const std::string source = modules_path.string();
  ARACH_ASSIGN_OR_RETURN(json modules, ReadJsonFile(source));
  if (!modules.is_array()) return InvalidField(source, "not a JSON list of modules");
  bool pooled = false, transformed = false;
  for (size_t i = 0; i < modules.size(); ++i) {
    const json& module = modules[i];
    const auto type_it = module.is_object() ? module.find("type") : module.end();
    if (!module.is_object() || type_it == module.end() || !type_it->is_string()) {
      return InvalidField(source, absl::StrCat("module ", i, " has no \"type\" string"));
    }
    const std::string type = type_it->get<std::string>();
    const std::string name = type.rfind(kModulePrefix, 0) == 0 ? type.substr(sizeof(kModulePrefix) - 1) : type;
    if (name == "Normalize") continue;
    const bool again = (name == "Pooling" && pooled) || (name == "Transformer" && transformed);
    if ((name != "Pooling" && name != "Transformer") || again) {
      return InvalidField(source, absl::StrCat("module ", i, " (", type, again ? absl::StrCat(", a second ", name) : "",
                                          ") is not supported: embeddings would differ from the model's (this engine runs "
                                          "one Transformer, one Pooling and Normalize modules)"));
    }
    ARACH_ASSIGN_OR_RETURN(const std::filesystem::path folder, ModuleFolder(dir, module, source, i, name));
    if (name == "Transformer") {
      ARACH_RETURN_IF_ERROR(ReadTransformerConfig((folder / "sentence_bert_config.json").string(), config));
      transformed = true;
      continue;
    }
    config.pooling_source = (folder / "config.json").string();
    ARACH_ASSIGN_OR_RETURN(config.pooling, ReadPoolingConfig(config.pooling_source, hidden_size));
    pooled = true;
  }
  if (!pooled) return InvalidField(source, "has no Pooling module (its embeddings are not defined)");
  ARACH_RETURN_IF_ERROR(ReadDefaultPrompt((std::filesystem::path(dir) / "config_sentence_transformers.json").string(), config));
  return config;
}

}  // namespace arach
