#include <cstdio>

#include "engine/core/status.h"
#include "tools/make_model/make_model.h"
#include "tools/arach_run/commands.h"

namespace arach::tools {

absl::Status RunMakeModel(const MakeModelOptions& options) {
  if (options.out_dir.empty()) return absl::InvalidArgumentError("make-model: --out DIR is required");
  ARACH_ASSIGN_OR_RETURN(ModelConfig config, MakeModel(options));
  int64_t params = static_cast<int64_t>(config.vocab_size) * config.hidden_size;
  const int64_t d = config.hidden_size;
  const int64_t per_layer = d * config.qkv_size() + static_cast<int64_t>(config.q_size()) * d +
                            (config.gated_mlp ? 3 : 2) * d * config.intermediate_size;
  params += per_layer * config.num_layers;
  if (!config.tie_word_embeddings) params += static_cast<int64_t>(config.vocab_size) * d;
  if (config.learned_positions) params += static_cast<int64_t>(config.max_positions) * d;
  std::printf("wrote %s: %s/%s, %d layers, d=%d, %.1fM parameters (seed %llu)\n", options.out_dir.c_str(),
              options.arch.c_str(), options.preset.c_str(), config.num_layers, config.hidden_size, params / 1e6,
              static_cast<unsigned long long>(options.seed));
  return absl::OkStatus();
}

}  // namespace arach::tools
