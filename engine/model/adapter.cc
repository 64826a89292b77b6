#include "engine/model/adapter.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/model/checkpoint.h"

namespace arach {
namespace {

// The module path the reference code hangs the adapter on, for layer `i`.
std::vector<std::string> ModuleCandidates(Architecture arch, int i) {
  switch (arch) {
    case Architecture::kGpt2:
      return {absl::StrCat("transformer.h.", i, ".attn.c_attn"), absl::StrCat("h.", i, ".attn.c_attn")};
    case Architecture::kGptNeox:
      return {absl::StrCat("gpt_neox.layers.", i, ".attention.query_key_value")};
    case Architecture::kLlama:
    case Architecture::kMistral:
    case Architecture::kQwen2:
    case Architecture::kQwen3:
      return {absl::StrCat("model.layers.", i, ".self_attn")};
  }
  return {};
}

}  // namespace

absl::StatusOr<AdapterWeights> LoadAdapter(const std::string& path, const ModelConfig& config) {
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> file, Checkpoint::OpenFile(path));
  AdapterWeights adapter;
  adapter.source = path;
  const int64_t d = config.hidden_size;
  size_t used = 0;
  for (int i = 0; i < config.num_layers; ++i) {
    std::string prefix;
    for (const std::string& module : ModuleCandidates(config.arch, i)) {
      if (file->Has(module + ".preproj.up_proj.weight")) prefix = module + ".preproj.";
    }
    if (prefix.empty()) prefix = ModuleCandidates(config.arch, i).front() + ".preproj.";
    ARACH_ASSIGN_OR_RETURN(const TensorInfo* up_info, file->Find(prefix + "up_proj.weight"));
    if (up_info->shape.size() != 2 || up_info->shape[1] != d || up_info->shape[0] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor \"", prefix, "up_proj.weight\" has shape ",
                                                     up_info->ShapeString(), ", expected [E, ", d, "]"));
    }
    const int64_t expansion = up_info->shape[0];
    if (adapter.expansion == 0) adapter.expansion = static_cast<int>(expansion);
    if (expansion != adapter.expansion) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor \"", prefix, "up_proj.weight\" has E=", expansion,
                                                     " but layer 0 has E=", adapter.expansion));
    }
    AdapterLayer layer;
    ARACH_ASSIGN_OR_RETURN(layer.up.data, file->ReadFloat(prefix + "up_proj.weight", {expansion, d}));
    layer.up.shape = {expansion, d};
    ARACH_ASSIGN_OR_RETURN(layer.down.data, file->ReadFloat(prefix + "down_proj.weight", {d, expansion}));
    layer.down.shape = {d, expansion};
    ARACH_ASSIGN_OR_RETURN(layer.skip.data, file->ReadFloat(prefix + "skip_proj.weight", {d, d}));
    layer.skip.shape = {d, d};
    adapter.layers.push_back(std::move(layer));
    used += 3;
  }
  if (used != file->Names().size()) {
    for (const std::string& name : file->Names()) {
      bool known = false;
      for (int i = 0; i < config.num_layers && !known; ++i) {
        for (const std::string& module : ModuleCandidates(config.arch, i)) {
          known |= absl::StartsWith(name, module + ".preproj.");
        }
      }
      if (!known) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": tensor \"", name, "\" does not belong to any of the model's ",
                                                       config.num_layers, " ", ArchitectureName(config.arch), " layers"));
      }
    }
  }
  return adapter;
}

}  // namespace arach
