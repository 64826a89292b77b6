#include "engine/bundle/model_bundle.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/model/adapter.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/hub_embedding.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_weights.h"

namespace arach {

int KvBlocksForBytes(const ModelConfig& config, int block_size, DType dtype, size_t bytes) {
  const size_t per_block = KvCache::BytesPerBlock(config, block_size, dtype);
  return static_cast<int>(std::max<size_t>(1, bytes / per_block));
}

absl::StatusOr<FeatureWeights> LoadFeatureWeights(const ModelConfig& config, const ModelWeights& weights,
                                                 const LoadModelOptions& options) {
  FeatureWeights features;
  if (options.hub_embedding.empty()) {
    features.hub_embedding = DefaultHubEmbedding(weights.token_embedding, options.hub_seed);
  } else {
    ARACH_ASSIGN_OR_RETURN(features.hub_embedding, LoadHubEmbedding(options.hub_embedding, config.hidden_size));
  }
  if (!options.adapter.empty()) {
    ARACH_ASSIGN_OR_RETURN(features.adapter, LoadAdapter(options.adapter, config));
  }
  const LoraLimits& limits = options.lora_limits;
  ARACH_RETURN_IF_ERROR(CheckLoraModuleCount(options));
  for (const LoraModule& module : options.lora_modules) {
    ARACH_ASSIGN_OR_RETURN(LoraAdapter lora, LoadLoraAdapter(module.name, module.path, config));
    ARACH_RETURN_IF_ERROR(CheckLoraRank(lora, limits));
    features.loras.push_back(std::move(lora));
  }
  return features;
}

absl::Status ParseLoraModulesFlag(const std::vector<std::string>& entries, LoadModelOptions& load) {
  load.lora_modules.clear();
  for (const std::string& entry : entries) {
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    const auto refuse = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("--lora_modules: '", entry, "': ", why));
    };
    if (eq == std::string::npos) return refuse("expected NAME=PATH");
    LoraModule module{entry.substr(0, eq), entry.substr(eq + 1)};
    if (module.path.empty()) return refuse("expected NAME=PATH, both non-empty");
    if (absl::Status name = CheckLoraName(module.name); !name.ok()) return refuse(absl::StrCat("the name ", name.message()));
    for (const LoraModule& earlier : load.lora_modules) {
      if (earlier.name == module.name) return refuse("the name is given twice");
    }
    load.lora_modules.push_back(std::move(module));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> ResolveClassifierTokens(const Tokenizer& tokenizer, const std::vector<std::string>& tokens) {
  const auto refuse = [](absl::string_view why) { return absl::InvalidArgumentError(absl::StrCat("--classifier_from_token: ", why)); };
  if (tokens.empty() || tokens.size() > 2) return refuse(absl::StrCat(tokens.size(), " tokens given; 1 or 2 are scored"));
  std::vector<int32_t> ids;
  for (const std::string& token : tokens) {
    const std::optional<int32_t> id = tokenizer.TokenToId(token);
    if (!id) return refuse(absl::StrCat("'", token, "' is no token of the vocabulary of ", tokenizer.Describe()));
    ids.push_back(*id);
  }
  const absl::StatusOr<std::vector<int32_t>> plain = tokenizer.Encode("a", false);
  const absl::StatusOr<std::vector<int32_t>> special = tokenizer.Encode("a", true);
  if (!plain.ok() || !special.ok() || *plain != *special) {
    return refuse(absl::StrCat(tokenizer.Describe(), " adds special tokens to a sequence, and pairs are encoded here as "
                               "two texts' tokens one after the other, not by its pair template"));
  }
  return ids;
}

absl::Status CheckLoraModuleCount(const LoadModelOptions& load) {
  const LoraLimits& limits = load.lora_limits;
  if (limits.max_registered() > 0 && static_cast<int>(load.lora_modules.size()) > limits.max_registered()) {
    return absl::InvalidArgumentError(absl::StrCat("--lora_modules: ", load.lora_modules.size(), " adapters are more than ",
                                                   limits.registered_flag(), " ", limits.max_registered()));
  }
  return absl::OkStatus();
}

absl::Status ParseStorageDTypeFlags(absl::string_view weight_dtype, absl::string_view kv_cache_dtype, LoadModelOptions& load) {
  absl::StatusOr<WeightDTypeChoice> weights = ParseWeightDType(weight_dtype);
  if (!weights.ok()) return absl::InvalidArgumentError(absl::StrCat("--weight_dtype: ", weights.status().message()));
  absl::StatusOr<KvDTypeChoice> kv = ParseKvCacheDType(kv_cache_dtype);
  if (!kv.ok()) return absl::InvalidArgumentError(absl::StrCat("--kv_cache_dtype: ", kv.status().message()));
  load.weight_dtype = *weights;
  load.kv_cache_dtype = *kv;
  return absl::OkStatus();
}

absl::StatusOr<ModelBundle> LoadModelBundle(const std::string& dir, const LoadModelOptions& options) {
  ModelBundle model;
  model.dir = dir;
  ARACH_ASSIGN_OR_RETURN(model.config, LoadModelConfig(dir));
  ARACH_ASSIGN_OR_RETURN(model.tokenizer, LoadTokenizer(dir));
  if (model.tokenizer->vocab_size() > model.config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": the tokenizer has ", model.tokenizer->vocab_size(),
                                                   " tokens but config.json says vocab_size ", model.config.vocab_size));
  }
  ARACH_ASSIGN_OR_RETURN(model.chat_template, LoadChatTemplate(dir, model.tokenizer->config(), options.chat_template));
  ARACH_ASSIGN_OR_RETURN(model.embedding_config, LoadEmbeddingConfig(dir, model.config.hidden_size));
  if (!options.classifier_from_token.empty()) {
    ARACH_ASSIGN_OR_RETURN(model.classifier_token_ids, ResolveClassifierTokens(*model.tokenizer, options.classifier_from_token));
  }
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(dir));
  ARACH_ASSIGN_OR_RETURN(ModelWeights weights, LoadModelWeights(*checkpoint, model.config));
  const DType checkpoint_dtype = checkpoint->MatrixDType();
  checkpoint.reset();  // unmap the files; the weights are copied
  ARACH_ASSIGN_OR_RETURN(FeatureWeights features, LoadFeatureWeights(model.config, weights, options));
  if (options.max_model_len > 0) {  // after the weights, whose learned positions (GPT-2's) keep the model's count
    if (options.max_model_len > model.config.max_positions) {
      return absl::InvalidArgumentError(absl::StrCat("max_model_len ", options.max_model_len, " exceeds the context of ", dir,
                                                     " (", model.config.max_positions, " positions in config.json)"));
    }
    model.config.max_positions = options.max_model_len;
  }
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                         CreateBackend(options.device, BackendOptions{options.cpu_threads, options.weight_dtype,
                                                                      options.kv_cache_dtype, checkpoint_dtype}));
  KvCacheConfig kv;
  kv.block_size = options.block_size;
  if (options.kv_blocks > 0) {
    kv.num_blocks = options.kv_blocks;
  } else if (options.kv_cache_bytes > 0) {
    kv.num_blocks = KvBlocksForBytes(model.config, kv.block_size, backend->kv_cache_dtype(), options.kv_cache_bytes);
  } else if (options.kv_memory_fraction > 0) {
    kv.free_memory_fraction = options.kv_memory_fraction;  // resolved once the weights are on the device
  } else {
    // Long-context models (Llama 3's 131072) would ask for far more than a test or benchmark needs.
    const int tokens = std::min(model.config.max_positions, kDefaultKvTokensPerSequence);
    const int per_sequence = (tokens + kv.block_size - 1) / kv.block_size;
    kv.num_blocks = per_sequence * std::max(1, options.default_kv_sequences);
  }
  const LoraLimits& limits = options.lora_limits;
  for (LoraAdapter& lora : features.loras) {
    ModelBundle::StartupLora& startup = model.startup_loras.emplace_back();
    startup.name = lora.name;
    if (limits.swaps()) startup.host = std::make_shared<const LoraAdapter>(std::move(lora));
  }
  if (limits.swaps()) {  // the device starts with the first max_loras; the rest come when requests need them
    features.loras.clear();
    for (size_t i = 0; i < model.startup_loras.size() && static_cast<int>(i) < limits.max_loras; ++i) {
      features.loras.push_back(*model.startup_loras[i].host);
    }
  }
  if (options.lora_runtime_loading || limits.swaps()) {
    if (limits.max_loras <= 0 || limits.max_rank <= 0) {
      return absl::InvalidArgumentError(
          "loading LoRA adapters while serving needs --max_loras and --max_lora_rank (the memory kept for them)");
    }
    // The adapters on the device never take more than max_loras at the largest rank, whichever they are.
    size_t on_device = 0;
    for (const LoraAdapter& lora : features.loras) on_device += LoraBytes(*backend, lora);
    const size_t bound = static_cast<size_t>(limits.max_loras) * LoraBytesBound(*backend, model.config, limits.max_rank);
    kv.keep_free_bytes = bound > on_device ? bound - on_device : 0;
  }
  model.lora_limits = options.lora_limits;
  ARACH_ASSIGN_OR_RETURN(model.runner, ModelRunner::Create(std::move(backend), model.config, std::move(weights),
                                                           std::move(features), kv));
  model.runner->set_step_graphs(options.step_graphs);
  return model;
}

}  // namespace arach
